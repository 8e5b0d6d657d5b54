//! Which model a chat request may use.
//!
//! The aliases `main` and `sub` resolve to the configured models
//! (`ATELIER_MODEL_MAIN`, `ATELIER_MODEL_SUB`) or, when none is configured,
//! to a chat model the upstream lists (`GET {base}/models`); an alias is
//! never forwarded as it is. Any other name must be configured or listed by
//! the upstream, so a client cannot spend the key on a model the person did
//! not choose, unless `ATELIER_ALLOW_ANY_MODEL` is on.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::Value;

use crate::discovery::{ollama_models, pick, ModelInfo};
use crate::error::ProxyError;
use crate::upstream::Upstream;

/// How long a model list is trusted.
const LIST_TTL: Duration = Duration::from_secs(60);
/// How long a failed list fetch is remembered (so a client cannot make the
/// proxy hammer an upstream that has no list).
const FAILURE_TTL: Duration = Duration::from_secs(5);
/// Largest model list read.
const LIST_LIMIT: usize = 1024 * 1024;

/// The upstream's model list, fetched on demand and cached (one per upstream).
#[derive(Default, Debug)]
pub struct ModelCatalog {
    cached: Mutex<Option<Fetched>>,
}

/// A list fetch and when it happened.
type Fetched = (Instant, Result<Vec<ModelInfo>, ListError>);

#[derive(Debug, Clone)]
pub(crate) enum ListError {
    Unreachable(String),
    NoList(String),
}

/// Names that are embedding (or other non-chat) models by convention.
pub fn is_embedding(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    ["embed", "bge-", "e5-", "gte-", "rerank", "whisper", "tts", "dall-e", "moderation"].iter().any(|m| id.contains(m))
}

/// The model ids of an OpenAI-compatible list (`{"data": [{"id"}]}`) or of
/// Ollama's `/api/tags` (`{"models": [{"name"}]}`); `None` when `value` is
/// neither.
pub fn list_of(value: &Value) -> Option<Vec<String>> {
    let (items, key) = match (value.get("data"), value.get("models")) {
        (Some(Value::Array(items)), _) => (items, "id"),
        (_, Some(Value::Array(items))) => (items, "name"),
        _ => return None,
    };
    Some(items.iter().filter_map(|m| m.get(key).and_then(Value::as_str)).map(str::to_owned).collect())
}

impl ModelCatalog {
    /// The model to forward for `requested`, or why not.
    pub async fn resolve(
        &self,
        http: &reqwest::Client,
        upstream: &Upstream,
        requested: Option<&str>,
        allow_any: bool,
    ) -> Result<String, ProxyError> {
        let requested = requested.map(str::trim).filter(|m| !m.is_empty());
        let alias = match requested {
            None | Some("main") => Some(Alias::Main),
            Some("sub") => Some(Alias::Sub),
            Some(_) => None,
        };
        let configured = match alias {
            Some(Alias::Main) => upstream.model_main.clone(),
            Some(Alias::Sub) => upstream.model_sub.clone().or_else(|| upstream.model_main.clone()),
            None => None,
        };
        if let Some(model) = configured {
            return Ok(model);
        }
        if let Some(name) = requested.filter(|_| alias.is_none()) {
            let is_configured = [&upstream.model_main, &upstream.model_sub].iter().any(|m| m.as_deref() == Some(name));
            if is_configured || allow_any {
                return Ok(name.to_owned());
            }
        }
        let listed = self.list(http, upstream).await;
        match (alias, listed) {
            (_, Err(ListError::Unreachable(detail))) => Err(ProxyError::new(
                StatusCode::BAD_GATEWAY,
                "upstream_unreachable",
                format!("cannot reach the LLM upstream at {} to resolve the model: {detail}", upstream.display_base()),
            )),
            (Some(alias), Ok(list)) => match pick(&list) {
                Some((main, sub)) => Ok(if matches!(alias, Alias::Main) { main } else { sub }),
                None => Err(refused(format!(
                    "{} offers no chat model (only embedding models); load or pull a chat model there, or set \
                     ATELIER_MODEL_MAIN",
                    upstream.display_base()
                ))),
            },
            (Some(_), Err(ListError::NoList(why))) => Err(refused(format!(
                "no model is configured for the alias and the upstream lists none ({why}); set ATELIER_MODEL_MAIN"
            ))),
            (None, Ok(list)) => {
                let name = requested.unwrap_or_default();
                if list.iter().any(|m| m.id == name) {
                    Ok(name.to_owned())
                } else {
                    Err(refused(format!(
                        "the model {name:?} is neither configured nor offered by the upstream; use \"main\" or \"sub\", \
                         one of the upstream's models, or set ATELIER_ALLOW_ANY_MODEL=true"
                    )))
                }
            }
            (None, Err(ListError::NoList(why))) => Err(refused(format!(
                "the model {:?} is not configured and the upstream lists no models ({why}); use \"main\" or \"sub\", \
                 or set ATELIER_ALLOW_ANY_MODEL=true",
                requested.unwrap_or_default()
            ))),
        }
    }

    /// The upstream's models (cached), or an empty list when it has none to say.
    pub async fn models(&self, http: &reqwest::Client, upstream: &Upstream) -> Vec<ModelInfo> {
        self.list(http, upstream).await.unwrap_or_default()
    }

    /// Starts the cache with a list just read (a detected server's).
    pub fn seed(&self, models: Vec<ModelInfo>) {
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), Ok(models)));
    }

    async fn list(&self, http: &reqwest::Client, upstream: &Upstream) -> Result<Vec<ModelInfo>, ListError> {
        if let Some((at, list)) = self.cached.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let ttl = if list.is_ok() { LIST_TTL } else { FAILURE_TTL };
            if at.elapsed() < ttl {
                return list.clone();
            }
        }
        let list = fetch(http, upstream).await;
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), list.clone()));
        list
    }
}

#[derive(Clone, Copy)]
enum Alias {
    Main,
    Sub,
}

fn refused(message: impl Into<String>) -> ProxyError {
    ProxyError::new(StatusCode::BAD_REQUEST, "model_not_allowed", message)
}

async fn fetch(http: &reqwest::Client, upstream: &Upstream) -> Result<Vec<ModelInfo>, ListError> {
    let value = get(http, upstream, &format!("{}/models", upstream.base)).await?;
    let ids = list_of(&value).ok_or_else(|| ListError::NoList("GET /models is not a model list".into()))?;
    // A local Ollama says more about its models (family, size) in its own listing.
    if upstream.is_loopback() {
        let root = upstream.base.trim_end_matches("/v1");
        let tags = get(http, upstream, &format!("{root}/api/tags")).await.ok();
        if let Some(models) = tags.as_ref().and_then(ollama_models) {
            return Ok(models);
        }
    }
    Ok(ids.into_iter().map(|id| ModelInfo { embedding: is_embedding(&id), id, parameters: None }).collect())
}

async fn get(http: &reqwest::Client, upstream: &Upstream, url: &str) -> Result<Value, ListError> {
    let mut call = http.get(url).timeout(Duration::from_secs(10));
    if let Some(key) = upstream.key() {
        call = call.bearer_auth(key);
    }
    let answer = call.send().await.map_err(|e| ListError::Unreachable(upstream.redact(&e.to_string())))?;
    if !answer.status().is_success() {
        let path = url.rsplit_once("//").map_or(url, |(_, rest)| rest.split_once('/').map_or(rest, |(_, p)| p));
        return Err(ListError::NoList(format!("GET /{path} answered {}", answer.status().as_u16())));
    }
    let body = read_limited(answer, LIST_LIMIT).await.map_err(ListError::NoList)?;
    serde_json::from_slice(&body).map_err(|_| ListError::NoList("the model list is not JSON".into()))
}

/// A response body, refused past `limit` bytes.
pub async fn read_limited(answer: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    let mut stream = answer.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if body.len() + chunk.len() > limit {
            return Err(format!("the answer is larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_of_both_shapes_and_nothing_else() {
        let openai = json!({"object": "list", "data": [{"id": "gpt-x"}, {"id": "text-embedding-3-small"}]});
        assert_eq!(list_of(&openai).unwrap(), ["gpt-x", "text-embedding-3-small"]);
        let ollama =
            json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}, {"name": "nomic-embed-text:latest"}]});
        assert_eq!(list_of(&ollama).unwrap(), ["qwen3:8b", "nomic-embed-text:latest"]);
        for not_a_list in [json!({"ok": true}), json!([]), json!("models"), json!({"data": "x"})] {
            assert!(list_of(&not_a_list).is_none(), "{not_a_list}");
        }
    }

    #[test]
    fn embedding_models_are_recognised() {
        for id in ["text-embedding-3-small", "nomic-embed-text:latest", "bge-m3", "mxbai-embed-large"] {
            assert!(is_embedding(id), "{id}");
        }
        for id in ["gpt-4o-mini", "qwen3:8b", "llama-3.1-8b-instruct"] {
            assert!(!is_embedding(id), "{id}");
        }
    }
}
