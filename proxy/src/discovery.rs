//! Finding a local model server and its models, with no configuration.
//!
//! The usual servers listen on known loopback ports (Ollama 11434, llama.cpp
//! 8080, LM Studio 1234, vLLM 8000; `ATELIER_LOCAL_PORTS` replaces the list).
//! A port counts only when `GET /v1/models` answers an OpenAI-compatible model
//! list. The models come from that list or, from Ollama, from its own
//! `/api/tags`, which says each model's family and size: embedding models are
//! never picked; the main model is the largest chat model, the sub model the
//! smallest (names alone when sizes are unknown: the first listed for both).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::models::{is_embedding, list_of, read_limited};

/// Loopback ports of the usual local OpenAI-compatible servers.
pub const LOCAL_SERVERS: &[(u16, &str)] =
    &[(11434, "Ollama"), (8080, "llama.cpp server"), (1234, "LM Studio"), (8000, "vLLM")];

/// Largest listing read.
const LISTING_LIMIT: usize = 2 * 1024 * 1024;

/// A model a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub id: String,
    /// Parameters, when the server says (Ollama's `parameter_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<f64>,
    /// An embedding (or other non-chat) model: never picked.
    pub embedding: bool,
    /// Tokens of context the server really processes for it, where the
    /// server says (see `facts.rs`; for Ollama, what the proxy asks for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// What it can do (tools, thinking, vision), where the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<crate::facts::Capabilities>,
    /// Ollama: the context the model is loaded with now (the least `num_ctx`
    /// to ask for, so the server does not reload it smaller).
    #[serde(skip)]
    pub loaded_context: Option<u64>,
}

impl ModelInfo {
    /// A model known by its id alone.
    pub fn named(id: &str) -> ModelInfo {
        ModelInfo { id: id.to_owned(), embedding: is_embedding(id), ..ModelInfo::default() }
    }
}

/// A server found on a loopback port.
#[derive(Debug, Clone)]
pub struct Found {
    pub base: String,
    pub name: String,
    pub models: Vec<ModelInfo>,
}

/// Probes `ports` (or the usual ones) in order; the first that answers with a
/// model list wins.
pub async fn probe(ports: &[u16]) -> Option<Found> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(800))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .ok()?;
    let candidates: Vec<(u16, String)> = if ports.is_empty() {
        LOCAL_SERVERS.iter().map(|(p, n)| (*p, (*n).to_owned())).collect()
    } else {
        ports
            .iter()
            .map(|p| (*p, LOCAL_SERVERS.iter().find(|(q, _)| q == p).map_or("local server", |(_, n)| n).to_owned()))
            .collect()
    };
    for (port, name) in candidates {
        let root = format!("http://127.0.0.1:{port}");
        let base = format!("{root}/v1");
        let Some(listed) = get_json(&client, &format!("{base}/models")).await.as_ref().and_then(list_of) else {
            continue;
        };
        // Ollama's own listing knows families and sizes; use it where it answers.
        let ollama = get_json(&client, &format!("{root}/api/tags")).await.as_ref().and_then(ollama_models);
        let name = if ollama.is_some() { "Ollama".to_owned() } else { name };
        let models = ollama.unwrap_or_else(|| listed.iter().map(|id| ModelInfo::named(id)).collect());
        return Some(Found { base, name, models });
    }
    None
}

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    let answer = client.get(url).send().await.ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let body = read_limited(answer, LISTING_LIMIT).await.ok()?;
    serde_json::from_slice(&body).ok()
}

/// The models of Ollama's `/api/tags` answer, or `None` when it is not one.
pub fn ollama_models(value: &Value) -> Option<Vec<ModelInfo>> {
    let models = value.get("models")?.as_array()?;
    Some(
        models
            .iter()
            .filter_map(|m| {
                let id = m.get("name").or_else(|| m.get("model"))?.as_str()?.to_owned();
                let details = m.get("details");
                let families: Vec<&str> = details
                    .and_then(|d| d.get("families"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .chain(details.and_then(|d| d.get("family")).and_then(Value::as_str))
                    .collect();
                let embedding = is_embedding(&id) || families.iter().any(|f| f.contains("bert") || f.contains("embed"));
                let parameters =
                    details.and_then(|d| d.get("parameter_size")).and_then(Value::as_str).and_then(parameter_count);
                Some(ModelInfo { id, parameters, embedding, ..ModelInfo::default() })
            })
            .collect(),
    )
}

/// "8.0B" → 8e9, "270M" → 2.7e8, "1.5b" → 1.5e9.
pub fn parameter_count(size: &str) -> Option<f64> {
    let size = size.trim();
    let (number, unit) = size.split_at(size.find(|c: char| c.is_ascii_alphabetic())?);
    let scale = match unit.trim().to_ascii_uppercase().as_str() {
        "K" => 1e3,
        "M" => 1e6,
        "B" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    Some(number.trim().parse::<f64>().ok()? * scale)
}

/// The default main and sub model among `models`: the largest and the
/// smallest chat model when sizes are known, else the first chat model for
/// both. `None` when there is no chat model.
pub fn pick(models: &[ModelInfo]) -> Option<(String, String)> {
    let chat: Vec<&ModelInfo> = models.iter().filter(|m| !m.embedding).collect();
    let first = chat.first()?;
    if chat.iter().all(|m| m.parameters.is_some()) {
        let size = |m: &&ModelInfo| m.parameters.unwrap_or(0.0);
        let largest = chat.iter().copied().max_by(|a, b| size(a).total_cmp(&size(b)))?;
        let smallest = chat.iter().copied().min_by(|a, b| size(a).total_cmp(&size(b)))?;
        return Some((largest.id.clone(), smallest.id.clone()));
    }
    Some((first.id.clone(), first.id.clone()))
}

/// What the alias "embed" stands for when no model is set: the first
/// listed model that embeds text (not a reranker, a speech or image model).
pub fn pick_embedding(models: &[ModelInfo]) -> Option<String> {
    let other = ["rerank", "whisper", "tts", "dall-e", "moderation"];
    let embeds = |m: &&ModelInfo| m.embedding && !other.iter().any(|o| m.id.to_ascii_lowercase().contains(o));
    models.iter().find(embeds).map(|m| m.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ollama_listings_say_family_and_size() {
        let tags = json!({"models": [
            {"name": "qwen3:8b", "details": {"family": "qwen3", "families": ["qwen3"], "parameter_size": "8.2B"}},
            {"name": "gemma3:270m", "details": {"family": "gemma3", "parameter_size": "268.10M"}},
            {"name": "all-minilm:latest", "details": {"family": "bert", "families": ["bert"], "parameter_size": "23M"}},
        ]});
        let models = ollama_models(&tags).unwrap();
        assert!(models[2].embedding && !models[0].embedding);
        assert_eq!(pick(&models), Some(("qwen3:8b".into(), "gemma3:270m".into())));
        assert!(ollama_models(&json!({"data": []})).is_none());
    }

    #[test]
    fn sizes_and_picks() {
        assert_eq!(parameter_count("8.0B"), Some(8e9));
        assert_eq!(parameter_count("270M"), Some(2.7e8));
        assert_eq!(parameter_count("big"), None);
        let named = ModelInfo::named;
        assert_eq!(
            pick(&[named("text-embedding-nomic"), named("llama-3.2-3b")]),
            Some(("llama-3.2-3b".into(), "llama-3.2-3b".into()))
        );
        assert_eq!(pick(&[named("nomic-embed-text")]), None, "an embedding model is never picked");
    }
}
