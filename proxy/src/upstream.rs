//! The configured OpenAI-compatible upstream: where chat goes, with which key,
//! which models the aliases "main" and "sub" stand for, and how to find a
//! local server when nothing is configured.

use std::time::Duration;

use crate::models::list_of;
use crate::settings::{non_empty, Settings};

/// Loopback ports of the usual local OpenAI-compatible servers.
const LOCAL_SERVERS: &[(u16, &str)] = &[(11434, "Ollama"), (8080, "llama.cpp server"), (1234, "LM Studio")];

/// Where chat requests go.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// Base URL without a trailing slash (`…/v1`).
    pub base: String,
    key: Option<String>,
    /// How it was found: "configured" or the name of a detected local server.
    pub source: String,
    pub model_main: Option<String>,
    pub model_sub: Option<String>,
}

impl Upstream {
    /// The configured upstream, or a detected local one, or `None`.
    ///
    /// `ATELIER_UPSTREAM_KEY` belongs to the configured upstream only: a
    /// detected local server never receives it (whatever answers on a loopback
    /// port could be any program). A probe counts only when the answer is an
    /// OpenAI-compatible model list.
    pub async fn resolve(settings: &Settings) -> Option<Upstream> {
        let make = |base: &str, source: &str, key: Option<String>| Upstream {
            base: base.trim_end_matches('/').to_owned(),
            key,
            source: source.to_owned(),
            model_main: non_empty(&settings.model_main).map(str::to_owned),
            model_sub: non_empty(&settings.model_sub).map(str::to_owned),
        };
        if let Some(url) = non_empty(&settings.upstream_url) {
            return Some(make(url, "configured", non_empty(&settings.upstream_key).map(str::to_owned)));
        }
        if !settings.autodetect {
            return None;
        }
        let client = reqwest::Client::builder().timeout(Duration::from_millis(400)).no_proxy().build().ok()?;
        let ports: Vec<(u16, &str)> = if settings.local_ports.is_empty() {
            LOCAL_SERVERS.to_vec()
        } else {
            settings.local_ports.iter().map(|p| (*p, "local server")).collect()
        };
        for (port, name) in ports {
            let base = format!("http://127.0.0.1:{port}/v1");
            if probe(&client, &base).await {
                return Some(make(&base, name, None));
            }
        }
        None
    }

    /// The bearer key, if any.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The base URL as it may be shown (no credentials, no query).
    pub fn display_base(&self) -> String {
        redact_url(&self.base)
    }

    /// `text` with every occurrence of the key replaced.
    pub fn redact(&self, text: &str) -> String {
        match self.key.as_deref() {
            Some(key) if key.len() >= 4 => text.replace(key, "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

/// Whether `base` answers `GET /models` with a model list.
async fn probe(client: &reqwest::Client, base: &str) -> bool {
    let Ok(answer) = client.get(format!("{base}/models")).send().await else {
        return false;
    };
    if !answer.status().is_success() {
        return false;
    }
    match crate::models::read_limited(answer, 1024 * 1024).await {
        Ok(body) => serde_json::from_slice(&body).ok().and_then(|v| list_of(&v)).is_some(),
        Err(_) => false,
    }
}

/// A URL without user info or query string, for logs and `/api/health`.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.to_string().trim_end_matches('/').to_owned()
        }
        Err(_) => "(invalid URL)".into(),
    }
}
