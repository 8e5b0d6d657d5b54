//! The OpenAI-compatible upstream: where chat goes, with which key, which
//! models the aliases "main" and "sub" stand for, and how a local server is
//! found when nothing is configured.
//!
//! A configured upstream (`ATELIER_UPSTREAM_URL`) is fixed. Without one, the
//! proxy probes the usual local servers at start-up ([`crate::discovery`])
//! and, while none is found, again when chat is asked for (at most every
//! [`PROBE_EVERY`]), so a model server started after the proxy is found. A
//! detected server that stops answering is forgotten, and the next chat
//! request looks again.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::discovery::{self, pick, ModelInfo};
use crate::models::ModelCatalog;
use crate::settings::{non_empty, Settings};

/// Least time between two probes for a local server.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);

/// Where chat requests go.
#[derive(Debug)]
pub struct Upstream {
    /// Base URL without a trailing slash (`…/v1`).
    pub base: String,
    key: Option<String>,
    /// How it was found: "configured" or the name of a detected local server.
    pub source: String,
    /// What the alias "main" stands for (setting, or the detected server's pick).
    pub model_main: Option<String>,
    /// What the alias "sub" stands for.
    pub model_sub: Option<String>,
    /// What the alias "embed" stands for, when set (else the upstream's
    /// first embedding model).
    pub model_embed: Option<String>,
    /// The upstream's models, fetched on demand and cached.
    pub catalog: ModelCatalog,
    /// Most context the proxy asks of Ollama for a model (`options.num_ctx`),
    /// unless the server already runs it with more (`ATELIER_OLLAMA_MAX_CONTEXT`).
    pub ollama_max_context: u64,
}

impl Upstream {
    /// The bearer key, if any.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Whether it was detected (not configured).
    pub fn detected(&self) -> bool {
        self.source != "configured"
    }

    /// Whether it runs on this machine (a loopback address).
    pub fn is_loopback(&self) -> bool {
        url::Url::parse(&self.base).ok().and_then(|u| u.host_str().map(str::to_owned)).is_some_and(|h| {
            h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()) || h == "[::1]"
        })
    }

    /// Whether it runs on this machine or the local network (loopback,
    /// private or link-local addresses, `.local` names): where the local
    /// servers' own listings (Ollama, llama.cpp, LM Studio) are asked for.
    pub fn is_local(&self) -> bool {
        let Some(host) = url::Url::parse(&self.base).ok().and_then(|u| u.host_str().map(str::to_owned)) else {
            return false;
        };
        let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
        self.is_loopback()
            || host.ends_with(".local")
            || match ip {
                Ok(std::net::IpAddr::V4(v4)) => v4.is_private() || v4.is_link_local(),
                Ok(std::net::IpAddr::V6(v6)) => {
                    (v6.segments()[0] & 0xfe00) == 0xfc00 || (v6.segments()[0] & 0xffc0) == 0xfe80
                }
                Err(_) => false,
            }
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

/// What the proxy knows of its upstream, configured or detected.
pub struct Upstreams {
    configured: Option<Arc<Upstream>>,
    detected: RwLock<Option<Arc<Upstream>>>,
    /// When the last probe started; held while one runs (one probe at a time).
    last_probe: tokio::sync::Mutex<Option<Instant>>,
    autodetect: bool,
    ports: Vec<u16>,
    model_main: Option<String>,
    model_sub: Option<String>,
    model_embed: Option<String>,
    ollama_max_context: u64,
}

impl Upstreams {
    /// The configured upstream, or a first probe for a local one.
    ///
    /// `ATELIER_UPSTREAM_KEY` belongs to the configured upstream only: a
    /// detected local server never receives it (whatever answers on a loopback
    /// port could be any program).
    pub async fn start(settings: &Settings) -> Upstreams {
        let model_main = non_empty(&settings.model_main).map(str::to_owned);
        let model_sub = non_empty(&settings.model_sub).map(str::to_owned);
        let model_embed = non_empty(&settings.model_embed).map(str::to_owned);
        let configured = non_empty(&settings.upstream_url).map(|url| {
            Arc::new(Upstream {
                base: url.trim_end_matches('/').to_owned(),
                key: non_empty(&settings.upstream_key).map(str::to_owned),
                source: "configured".into(),
                model_main: model_main.clone(),
                model_sub: model_sub.clone(),
                model_embed: model_embed.clone(),
                catalog: ModelCatalog::default(),
                ollama_max_context: settings.ollama_max_context,
            })
        });
        let upstreams = Upstreams {
            configured,
            detected: RwLock::new(None),
            last_probe: tokio::sync::Mutex::new(None),
            autodetect: settings.autodetect,
            ports: settings.local_ports.clone(),
            model_main,
            model_sub,
            model_embed,
            ollama_max_context: settings.ollama_max_context,
        };
        upstreams.probe_if_due().await;
        upstreams
    }

    /// The upstream as it stands (no probing).
    pub fn current(&self) -> Option<Arc<Upstream>> {
        self.configured.clone().or_else(|| self.detected.read().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// The upstream for a chat request: while none is known, probes again
    /// (at most every [`PROBE_EVERY`]).
    pub async fn for_chat(&self) -> Option<Arc<Upstream>> {
        if let Some(upstream) = self.current() {
            return Some(upstream);
        }
        self.probe_if_due().await;
        self.current()
    }

    /// A detected server stopped answering: forget it, so the next request
    /// probes again (it may have moved, or another server may be up).
    pub fn lost(&self, upstream: &Arc<Upstream>) {
        if !upstream.detected() {
            return;
        }
        let mut detected = self.detected.write().unwrap_or_else(|p| p.into_inner());
        if detected.as_ref().is_some_and(|d| Arc::ptr_eq(d, upstream)) {
            *detected = None;
        }
    }

    async fn probe_if_due(&self) {
        if self.configured.is_some() || !self.autodetect {
            return;
        }
        let mut last = self.last_probe.lock().await;
        if last.is_some_and(|at| at.elapsed() < PROBE_EVERY) || self.current().is_some() {
            return;
        }
        *last = Some(Instant::now());
        let Some(found) = discovery::probe(&self.ports).await else {
            return;
        };
        let picked = pick(&found.models);
        let upstream = Upstream {
            base: found.base,
            key: None,
            source: found.name,
            model_main: self.model_main.clone().or_else(|| picked.as_ref().map(|(main, _)| main.clone())),
            model_sub: self.model_sub.clone().or_else(|| picked.map(|(_, sub)| sub)),
            model_embed: self.model_embed.clone(),
            catalog: ModelCatalog::default(),
            ollama_max_context: self.ollama_max_context,
        };
        // The models are read again, with what each server says of them
        // (windows, capabilities), when first asked for.
        eprintln!(
            "atelier-proxy: found {} at {} (main model: {}, sub model: {})",
            upstream.source,
            upstream.display_base(),
            upstream.model_main.as_deref().unwrap_or("none: it offers no chat model"),
            upstream.model_sub.as_deref().unwrap_or("none"),
        );
        *self.detected.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(upstream));
    }
}

/// The models of `upstream` for `/api/health`: the list and what the
/// aliases mean (each as its listing entry: id, window, capabilities).
pub async fn describe_models(
    http: &reqwest::Client,
    upstream: &Arc<Upstream>,
) -> (Vec<ModelInfo>, Option<(ModelInfo, ModelInfo)>) {
    let models = upstream.catalog.models(http, upstream).await;
    let picked = pick(&models);
    let main = upstream.model_main.clone().or_else(|| picked.as_ref().map(|(m, _)| m.clone()));
    let sub = upstream.model_sub.clone().or_else(|| picked.as_ref().map(|(_, s)| s.clone())).or_else(|| main.clone());
    let entry = |id: String| models.iter().find(|m| m.id == id).cloned().unwrap_or_else(|| ModelInfo::named(&id));
    let chosen = main.zip(sub).map(|(main, sub)| (entry(main), entry(sub)));
    (models, chosen)
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
