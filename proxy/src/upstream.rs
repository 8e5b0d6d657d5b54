//! The configured OpenAI-compatible upstream: where chat goes, with which key,
//! which models the aliases "main" and "sub" stand for, and how to find a
//! local server when nothing is configured.

use std::time::Duration;

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
    pub async fn resolve(settings: &Settings) -> Option<Upstream> {
        let key = non_empty(&settings.upstream_key).map(str::to_owned);
        let make = |base: &str, source: &str| Upstream {
            base: base.trim_end_matches('/').to_owned(),
            key: key.clone(),
            source: source.to_owned(),
            model_main: non_empty(&settings.model_main).map(str::to_owned),
            model_sub: non_empty(&settings.model_sub).map(str::to_owned),
        };
        if let Some(url) = non_empty(&settings.upstream_url) {
            return Some(make(url, "configured"));
        }
        if !settings.autodetect {
            return None;
        }
        let client = reqwest::Client::builder().timeout(Duration::from_millis(400)).no_proxy().build().ok()?;
        for (port, name) in LOCAL_SERVERS {
            let base = format!("http://127.0.0.1:{port}/v1");
            let answered = client.get(format!("{base}/models")).send().await.is_ok_and(|r| r.status().is_success());
            if answered {
                return Some(make(&base, name));
            }
        }
        None
    }

    /// The model a request's `model` field names: aliases map to the configured
    /// models; a missing model means "main" when that is configured.
    pub fn model_for(&self, requested: Option<&str>) -> Option<String> {
        match requested {
            Some("main") | None => self.model_main.clone().or(requested.map(str::to_owned)),
            Some("sub") => self.model_sub.clone().or_else(|| self.model_main.clone()).or(Some("sub".into())),
            Some(other) => Some(other.to_owned()),
        }
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
