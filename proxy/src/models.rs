//! Which model a chat request may use.
//!
//! The aliases `main` and `sub` resolve to the configured models
//! (`ATELIER_MODEL_MAIN`, `ATELIER_MODEL_SUB`) or, when none is configured,
//! to a chat model the upstream lists (`GET {base}/models`); an alias is
//! never forwarded as it is. Any other name must be configured or listed by
//! the upstream, so a client cannot spend the key on a model the person did
//! not choose, unless `ATELIER_ALLOW_ANY_MODEL` is on.
//!
//! The same listing says what each model's server says of it (`facts.rs`:
//! context window, capabilities) and whether the upstream is Ollama, whose
//! chat goes through its native API (`ollama.rs`). A listing is kept 60 s;
//! a stale one is served while a fresh one is fetched in the background, so
//! a chat request never waits for it (but the first). A listing that failed
//! because the upstream could not be reached is never trusted by a chat
//! request: it looks again (the server may be back).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::Value;

use crate::discovery::{ollama_models, pick, pick_embedding, ModelInfo};
use crate::error::ProxyError;
use crate::facts::{ollama_loaded, Facts};
use crate::upstream::Upstream;

/// How long a model list is trusted.
const LIST_TTL: Duration = Duration::from_secs(60);
/// How long a failed list fetch is remembered (so a client cannot make the
/// proxy hammer an upstream that has no list; a chat request looks again at
/// once when the upstream could not be reached).
const FAILURE_TTL: Duration = Duration::from_secs(5);
/// Largest model list read.
const LIST_LIMIT: usize = 1024 * 1024;

/// The upstream's models and what it is, fetched on demand and cached (one
/// per upstream).
#[derive(Default, Debug)]
pub struct ModelCatalog {
    cached: Mutex<Option<Fetched>>,
    refreshing: AtomicBool,
    /// What Ollama's `/api/show` said of each model (by name and digest):
    /// read once, a model's file does not change under its digest.
    shown: Mutex<HashMap<String, Facts>>,
    /// The `num_ctx` last asked of Ollama per model, never lowered (a change
    /// makes Ollama reload the model).
    pub(crate) num_ctx: Mutex<HashMap<String, u64>>,
    /// Models whose server refused a request because it offered `tools`
    /// (learned from the answer: servers that report no capabilities);
    /// they get the tools as text from then on.
    pub(crate) refused_tools: Mutex<std::collections::HashSet<String>>,
}

/// What the upstream serves.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub models: Vec<ModelInfo>,
    /// It is Ollama (its `/api/tags` answered): chat goes through `/api/chat`.
    pub ollama: bool,
}

/// A list fetch and when it happened.
type Fetched = (Instant, Result<Arc<Listing>, ListError>);

#[derive(Debug, Clone)]
pub(crate) enum ListError {
    Unreachable(String),
    NoList(String),
}

/// Who asks for the listing: a chat request never trusts a cached "cannot reach".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asker {
    Chat,
    Health,
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
        let listed = self.list(http, upstream, Asker::Chat).await.map(|l| l.models.clone());
        match (alias, listed) {
            (_, Err(ListError::Unreachable(detail))) => Err(unlisted(upstream, &detail)),
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
    pub async fn models(&self, http: &reqwest::Client, upstream: &Arc<Upstream>) -> Vec<ModelInfo> {
        self.list(http, upstream, Asker::Health).await.map(|l| l.models.clone()).unwrap_or_default()
    }

    /// What is known of the upstream for a chat request, without waiting for
    /// a listing unless none was ever fetched (a stale or failed one is
    /// refreshed in the background).
    pub async fn for_chat(&self, http: &reqwest::Client, upstream: &Arc<Upstream>) -> Arc<Listing> {
        let known = self.cached.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match known {
            // The upstream could not be reached: it may be back (and be Ollama).
            None | Some((_, Err(ListError::Unreachable(_)))) => {
                self.list(http, upstream, Asker::Chat).await.unwrap_or_default()
            }
            Some((at, listing)) => {
                if at.elapsed() >= LIST_TTL || listing.is_err() && at.elapsed() >= FAILURE_TTL {
                    self.refresh_in_background(http, upstream);
                }
                listing.unwrap_or_default()
            }
        }
    }

    /// Ollama's facts of `model` when the listing has none (a model the
    /// listing does not name): its `/api/show`, read once.
    pub async fn ollama_model(
        &self,
        http: &reqwest::Client,
        upstream: &Upstream,
        listing: &Listing,
        model: &str,
    ) -> ModelInfo {
        if let Some(known) = listing.models.iter().find(|m| m.id == model && m.context_window.is_some()) {
            return known.clone();
        }
        let mut info = ModelInfo::named(model);
        let facts = self.ollama_facts(http, upstream, model, "", &[]).await;
        info.context_window = facts.window;
        info.capabilities = facts.capabilities;
        info.loaded_context = facts.loaded;
        info
    }

    async fn list(&self, http: &reqwest::Client, upstream: &Upstream, asker: Asker) -> Result<Arc<Listing>, ListError> {
        if let Some((at, list)) = self.cached.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let trusted = match list {
                Ok(_) => at.elapsed() < LIST_TTL,
                Err(ListError::Unreachable(_)) if asker == Asker::Chat => false,
                Err(_) => at.elapsed() < FAILURE_TTL,
            };
            if trusted {
                return list.clone();
            }
        }
        let list = self.fetch(http, upstream).await.map(Arc::new);
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), list.clone()));
        list
    }

    fn refresh_in_background(&self, http: &reqwest::Client, upstream: &Arc<Upstream>) {
        if self.refreshing.swap(true, Ordering::SeqCst) {
            return;
        }
        let (http, upstream) = (http.clone(), upstream.clone());
        tokio::spawn(async move {
            let list = upstream.catalog.fetch(&http, &upstream).await.map(Arc::new);
            *upstream.catalog.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), list));
            upstream.catalog.refreshing.store(false, Ordering::SeqCst);
        });
    }

    /// Reads the upstream's listing, and what its server says of each model.
    async fn fetch(&self, http: &reqwest::Client, upstream: &Upstream) -> Result<Listing, ListError> {
        let value = get(http, upstream, &format!("{}/models", upstream.base)).await?;
        let ids = list_of(&value).ok_or_else(|| ListError::NoList("GET /models is not a model list".into()))?;
        let entries: Vec<&Value> = value.get("data").and_then(Value::as_array).into_iter().flatten().collect();
        let owned_by = |who: &str| entries.iter().any(|e| e.get("owned_by").and_then(Value::as_str) == Some(who));
        let root = upstream.base.strip_suffix("/v1").unwrap_or(&upstream.base);
        let local = upstream.is_local();
        // Ollama says more about its models (family, size) in its own listing,
        // and each model's trained length and capabilities in `/api/show`.
        if local || owned_by("library") || owned_by("ollama") {
            let tags = get(http, upstream, &format!("{root}/api/tags")).await.ok();
            if let Some(mut models) = tags.as_ref().and_then(ollama_models) {
                let digests: HashMap<&str, &str> = tags
                    .as_ref()
                    .and_then(|t| t.get("models")?.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|m| Some((m.get("name")?.as_str()?, m.get("digest")?.as_str()?)))
                    .collect();
                let ps = get(http, upstream, &format!("{root}/api/ps")).await.ok();
                let loaded = ps.as_ref().map(ollama_loaded).unwrap_or_default();
                let chat: Vec<usize> = (0..models.len()).filter(|&i| !models[i].embedding).collect();
                let facts = futures_util::future::join_all(chat.iter().map(|&i| {
                    let id = models[i].id.clone();
                    let digest = digests.get(id.as_str()).copied().unwrap_or_default().to_owned();
                    let loaded = &loaded;
                    async move { self.ollama_facts(http, upstream, &id, &digest, loaded).await }
                }))
                .await;
                for (&i, facts) in chat.iter().zip(facts) {
                    models[i].context_window = facts.window;
                    models[i].capabilities = facts.capabilities;
                    models[i].loaded_context = facts.loaded;
                }
                return Ok(Listing { models, ollama: true });
            }
        }
        let mut models: Vec<ModelInfo> = ids
            .iter()
            .map(|id| {
                let facts = entries
                    .iter()
                    .find(|e| e.get("id").and_then(Value::as_str) == Some(id))
                    .map(|e| Facts::of_list_entry(e));
                let facts = facts.unwrap_or_default();
                ModelInfo { context_window: facts.window, capabilities: facts.capabilities, ..ModelInfo::named(id) }
            })
            .collect();
        // llama.cpp serves one model; its `/props` says the context of a slot.
        if local || owned_by("llamacpp") {
            if let Ok(props) = get(http, upstream, &format!("{root}/props")).await {
                let facts = crate::facts::of_llama_cpp_props(&props);
                for model in models.iter_mut().filter(|m| !m.embedding) {
                    model.context_window = facts.window.or(model.context_window);
                    model.capabilities = facts.capabilities.or(model.capabilities);
                }
            }
        }
        // LM Studio's own listing says what each model is loaded with.
        if local || owned_by("organization_owner") {
            if let Ok(studio) = get(http, upstream, &format!("{root}/api/v0/models")).await {
                for entry in studio.get("data").and_then(Value::as_array).into_iter().flatten() {
                    let id = entry.get("id").and_then(Value::as_str);
                    if let Some(model) = models.iter_mut().find(|m| Some(m.id.as_str()) == id) {
                        let facts = Facts::of_list_entry(entry);
                        model.context_window = facts.window.or(model.context_window);
                        model.capabilities = facts.capabilities.or(model.capabilities);
                        model.embedding |= entry.get("type").and_then(Value::as_str) == Some("embeddings");
                    }
                }
            }
        }
        Ok(Listing { models, ollama: false })
    }

    /// One Ollama model's facts: `/api/show` (cached by name and digest),
    /// the context it is loaded with, and the window the proxy gives it.
    async fn ollama_facts(
        &self,
        http: &reqwest::Client,
        upstream: &Upstream,
        model: &str,
        digest: &str,
        loaded: &[(String, u64)],
    ) -> Facts {
        let key = format!("{model}@{digest}");
        let known = self.shown.lock().unwrap_or_else(|p| p.into_inner()).get(&key).copied();
        let mut facts = match known {
            Some(facts) => facts,
            None => {
                let root = upstream.base.strip_suffix("/v1").unwrap_or(&upstream.base);
                let show =
                    post(http, upstream, &format!("{root}/api/show"), &serde_json::json!({ "model": model })).await;
                let facts = show.as_ref().map(Facts::of_ollama_show).unwrap_or_default();
                if show.is_ok() {
                    self.shown.lock().unwrap_or_else(|p| p.into_inner()).insert(key, facts);
                }
                facts
            }
        };
        facts.loaded = loaded.iter().find(|(id, _)| id == model).map(|(_, ctx)| *ctx);
        facts.window_for_ollama(upstream.ollama_max_context);
        facts
    }
}

#[derive(Clone, Copy)]
enum Alias {
    Main,
    Sub,
}

impl ModelCatalog {
    /// The embedding model to forward for `requested`: "embed" (or none)
    /// is `ATELIER_MODEL_EMBED`, else the upstream's first embedding model;
    /// another name must be that setting, one the upstream lists, or any
    /// with `ATELIER_ALLOW_ANY_MODEL`.
    pub async fn resolve_embedding(
        &self,
        http: &reqwest::Client,
        upstream: &Upstream,
        requested: Option<&str>,
        allow_any: bool,
    ) -> Result<String, ProxyError> {
        let requested = requested.map(str::trim).filter(|m| !m.is_empty() && *m != "embed");
        match (requested, &upstream.model_embed) {
            (None, Some(configured)) => return Ok(configured.clone()),
            (Some(name), configured) if allow_any || configured.as_deref() == Some(name) => return Ok(name.to_owned()),
            _ => {}
        }
        let none = |why: String| {
            ProxyError::new(
                StatusCode::NOT_FOUND,
                "no_embedding_model",
                format!("{why}; pull or load one there (e.g. nomic-embed-text), or set ATELIER_MODEL_EMBED"),
            )
        };
        match (requested, self.list(http, upstream, Asker::Chat).await) {
            (_, Err(ListError::Unreachable(detail))) => Err(unlisted(upstream, &detail)),
            (None, Ok(list)) => pick_embedding(&list.models)
                .ok_or_else(|| none(format!("{} offers no embedding model", upstream.display_base()))),
            (None, Err(ListError::NoList(why))) => {
                Err(none(format!("no embedding model is configured and the upstream lists none ({why})")))
            }
            (Some(name), Ok(list)) if list.models.iter().any(|m| m.id == name) => Ok(name.to_owned()),
            (Some(name), _) => Err(refused(format!(
                "the model {name:?} is neither configured nor offered by the upstream; use \"embed\", one of the \
                 upstream's models, or set ATELIER_ALLOW_ANY_MODEL=true"
            ))),
        }
    }
}

/// The upstream could not be asked for its models.
fn unlisted(upstream: &Upstream, detail: &str) -> ProxyError {
    ProxyError::new(
        StatusCode::BAD_GATEWAY,
        "upstream_unreachable",
        format!("cannot reach the LLM upstream at {} to resolve the model: {detail}", upstream.display_base()),
    )
}

fn refused(message: impl Into<String>) -> ProxyError {
    ProxyError::new(StatusCode::BAD_REQUEST, "model_not_allowed", message)
}

async fn get(http: &reqwest::Client, upstream: &Upstream, url: &str) -> Result<Value, ListError> {
    read_json(http.get(url), upstream, url).await
}

async fn post(http: &reqwest::Client, upstream: &Upstream, url: &str, body: &Value) -> Result<Value, ListError> {
    read_json(http.post(url).json(body), upstream, url).await
}

async fn read_json(call: reqwest::RequestBuilder, upstream: &Upstream, url: &str) -> Result<Value, ListError> {
    let mut call = call.timeout(Duration::from_secs(10));
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
