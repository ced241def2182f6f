//! Counting input tokens with the server's own tokenizer (`--tokenizer-from-server`): vLLM's
//! `POST /tokenize`, once per distinct request body before the run, never per request.
//!
//! Wire format (vLLM 0.32, `tests/fixtures/engines/vllm/tokenize*.http`): a completions body
//! becomes `{"model": M, "prompt": P}`, a chat body `{"model": M, "messages": [...],
//! "add_generation_prompt": true}` (the chat template applied, as the server applies it to the
//! request: its `usage.prompt_tokens` is that count); the answer is `{"count": N,
//! "max_model_len": L, "tokens": [...], "token_strs": null}` and `count` is read. A server whose
//! `/tokenize` answers without `count` (llama.cpp's takes `{"content"}`, applies no chat template
//! and answers `{"tokens": []}` to this body) or that has none is an error naming the flag.

use futures_util::{StreamExt, TryStreamExt};
use serde_json::{Value, json};

use crate::target::{Api, Target};

/// Bodies counted at once (the server tokenizes on its API process, not its engine).
const IN_FLIGHT: usize = 8;

/// Why the server could not count the input tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizeError {
    /// `/tokenize` is not there (or refuses the body).
    #[error(
        "--tokenizer-from-server: {url} answered HTTP {status}{detail}: this server has no vLLM-style /tokenize; drop the flag, or give --tokenizer with the model's tokenizer.json"
    )]
    NoEndpoint {
        /// The URL asked.
        url: String,
        /// Its status.
        status: u16,
        /// The start of the answer, when it said something.
        detail: String,
    },
    /// The server answered, but not with a count.
    #[error(
        "--tokenizer-from-server: {url} answered without a token count ({shown}): it is not vLLM's /tokenize (llama.cpp's takes {{\"content\"}} and applies no chat template); drop the flag, or give --tokenizer with the model's tokenizer.json"
    )]
    NoCount {
        /// The URL asked.
        url: String,
        /// The start of the answer.
        shown: String,
    },
    /// The server could not be reached.
    #[error("--tokenizer-from-server: cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What the transport said.
        reason: String,
    },
    /// A request body without the prompt (or messages) of a chat or completions request.
    #[error(
        "--tokenizer-from-server: a request has no prompt or messages to count (vLLM's /tokenize takes chat and completions requests)"
    )]
    NoPrompt,
}

impl From<TokenizeError> for crate::error::Error {
    fn from(e: TokenizeError) -> Self {
        match e {
            TokenizeError::Unreachable { .. } => crate::error::Error::Failed(e.to_string()),
            _ => crate::error::Error::Usage(e.to_string()),
        }
    }
}

/// The `/tokenize` body for a prepared request body of `api` (`None`: not a body of the
/// endpoint's shape).
pub fn tokenize_body(api: Api, request: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(request).ok()?;
    let model = v.get("model")?.clone();
    match api {
        Api::Completions => Some(json!({"model": model, "prompt": v.get("prompt")?})),
        Api::Chat => Some(json!({
            "model": model,
            "messages": v.get("messages")?,
            "add_generation_prompt": true,
        })),
        _ => None,
    }
}

/// The `count` of a `/tokenize` answer.
pub fn read_count(answer: &[u8]) -> Option<u32> {
    let v: Value = serde_json::from_slice(answer).ok()?;
    let n = v.get("count")?.as_u64()?;
    Some(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The server's input token count of each request body, in order (equal bodies are counted
/// once).
pub async fn count_all(
    http: &reqwest::Client,
    target: &Target,
    bodies: &[&[u8]],
) -> Result<Vec<u32>, TokenizeError> {
    let url = format!("{}/tokenize", target.base_url);
    let mut distinct: Vec<&[u8]> = bodies.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let counted: Vec<(&[u8], u32)> = futures_util::stream::iter(distinct)
        .map(|b| {
            let url = &url;
            async move { Ok((b, count_one(http, url, target.api, b).await?)) }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    let counts: std::collections::HashMap<&[u8], u32> = counted.into_iter().collect();
    Ok(bodies.iter().map(|b| counts[b]).collect())
}

/// The server's count of one request body.
async fn count_one(
    http: &reqwest::Client,
    url: &str,
    api: Api,
    request: &[u8],
) -> Result<u32, TokenizeError> {
    let body = tokenize_body(api, request).ok_or(TokenizeError::NoPrompt)?;
    let unreachable = |e: reqwest::Error| TokenizeError::Unreachable {
        url: url.to_string(),
        reason: crate::client::error_chain(&e),
    };
    let resp = http
        .post(url)
        .json(&body)
        .send()
        .await
        .map_err(unreachable)?;
    let status = resp.status();
    let answer = resp.bytes().await.map_err(unreachable)?;
    let shown = || String::from_utf8_lossy(&answer[..answer.len().min(120)]).into_owned();
    if !status.is_success() {
        return Err(TokenizeError::NoEndpoint {
            url: url.to_string(),
            status: status.as_u16(),
            detail: if answer.is_empty() {
                String::new()
            } else {
                format!(" ({})", shown())
            },
        });
    }
    read_count(&answer).ok_or_else(|| TokenizeError::NoCount {
        url: url.to_string(),
        shown: shown(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_and_counts_as_vllm_takes_and_gives_them() {
        // The request bodies of the real captures, turned into what vLLM's /tokenize took.
        let chat = br#"{"model": "tiny-llama", "messages": [{"role": "user", "content": "Hello, how are you?"}], "max_tokens": 8, "stream": true}"#;
        assert_eq!(
            tokenize_body(Api::Chat, chat).unwrap(),
            json!({"model": "tiny-llama", "messages": [{"role": "user", "content": "Hello, how are you?"}], "add_generation_prompt": true})
        );
        let completion =
            br#"{"model": "tiny-llama", "prompt": "Hello, how are you?", "max_tokens": 8}"#;
        assert_eq!(
            tokenize_body(Api::Completions, completion).unwrap(),
            json!({"model": "tiny-llama", "prompt": "Hello, how are you?"})
        );
        assert_eq!(tokenize_body(Api::Generate, completion), None);
        assert_eq!(tokenize_body(Api::Chat, b"not json"), None);
        // vLLM's answers (the chat one counts its template: 23, as its usage did).
        let answer = |name: &str| crate::test_fixtures::body("vllm", name);
        assert_eq!(read_count(answer("tokenize").as_bytes()), Some(7));
        assert_eq!(read_count(answer("tokenize_chat").as_bytes()), Some(23));
        // llama.cpp's has tokens and no count.
        assert_eq!(
            read_count(crate::test_fixtures::body("llamacpp", "tokenize").as_bytes()),
            None
        );
    }

    #[test]
    fn errors_name_the_flag_and_what_to_do() {
        let e = TokenizeError::NoEndpoint {
            url: "http://h/tokenize".into(),
            status: 404,
            detail: String::new(),
        };
        let text = e.to_string();
        assert!(
            text.starts_with("--tokenizer-from-server: http://h/tokenize answered HTTP 404")
                && text.contains("drop the flag"),
            "{text}"
        );
        assert_eq!(crate::error::Error::from(e).exit_code(), 2);
    }
}
