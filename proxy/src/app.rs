//! The proxy's state and routes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State as AxumState};
use axum::http::{header, HeaderValue, Method};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use serde_json::{json, Value};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::services::{ServeDir, ServeFile};

use crate::gate::Gate;
use crate::limit::RateLimiter;
use crate::settings::{non_empty, Settings};
use crate::upstream::{describe_models, redact_url, Upstreams};
use crate::{chat, gate, limit, log, web};

/// Everything the handlers share.
pub struct AppState {
    pub upstreams: Upstreams,
    pub http: reqwest::Client,
    pub search_url: Option<String>,
    pub search_key: Option<String>,
    pub client_token: Option<String>,
    pub limiter: RateLimiter,
    pub open_url_allow: Vec<SocketAddr>,
    /// Which hosts and origins may use the proxy.
    pub gate: Gate,
    pub allow_any_model: bool,
    /// Time budget of one page's conversion to Markdown.
    pub page_timeout: Duration,
    allowed_origins: Vec<String>,
    static_dir: PathBuf,
    body_limit: usize,
}

/// The state, built once at start.
pub struct State(Arc<AppState>);

impl State {
    /// The state of a proxy listening on `bound` (the address the listener got).
    pub async fn new(settings: Settings, bound: SocketAddr) -> Result<State, String> {
        // No redirects: a key (in a header, or in the search API's JSON body)
        // must never be re-sent to wherever a 307/308 points.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(settings.upstream_timeout))
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let upstreams = Upstreams::start(&settings).await;
        Ok(State(Arc::new(AppState {
            upstreams,
            http,
            search_url: non_empty(&settings.search_url).map(str::to_owned),
            search_key: non_empty(&settings.search_key).map(str::to_owned),
            client_token: non_empty(&settings.client_token).map(str::to_owned),
            limiter: RateLimiter::new(settings.rate_limit),
            open_url_allow: settings.open_url_allow.clone(),
            gate: Gate::new(bound, &settings.allowed_hosts, &settings.allowed_origins),
            allow_any_model: settings.allow_any_model,
            page_timeout: Duration::from_millis(settings.page_timeout_ms.max(1)),
            allowed_origins: settings
                .allowed_origins
                .iter()
                .map(|o| o.trim().to_owned())
                .filter(|o| !o.is_empty())
                .collect(),
            static_dir: settings.static_dir.clone(),
            body_limit: settings.body_limit,
        })))
    }

    /// Prints what is configured (never a key).
    pub fn describe(&self, addr: &str) {
        let s = &self.0;
        eprintln!("atelier-proxy: listening on http://{addr}, serving {}", s.static_dir.display());
        match &s.upstreams.current() {
            Some(u) => eprintln!("atelier-proxy: LLM upstream {} ({})", u.display_base(), u.source),
            None => eprintln!(
                "atelier-proxy: no LLM upstream: chat answers 503. Set ATELIER_UPSTREAM_URL (and ATELIER_UPSTREAM_KEY), e.g.\n  \
                 ATELIER_UPSTREAM_URL=https://api.openai.com/v1 ATELIER_UPSTREAM_KEY=sk-...\n  \
                 ATELIER_UPSTREAM_URL=https://openrouter.ai/api/v1 ATELIER_UPSTREAM_KEY=sk-or-...\n  \
                 ATELIER_UPSTREAM_URL=http://127.0.0.1:11434/v1   (local Ollama)\n\
                 or start a local model server (Ollama, llama.cpp, LM Studio, vLLM): the proxy looks for one whenever chat is asked for."
            ),
        }
        if s.search_url.is_none() {
            eprintln!("atelier-proxy: no search API (ATELIER_SEARCH_URL): web search answers 503");
        }
    }
}

pub fn router(State(state): State) -> Router {
    let api = Router::new()
        .route("/api/chat", post(chat::completions))
        .route("/v1/chat/completions", post(chat::completions))
        .route("/api/tools/web-search", post(web::search))
        .route("/api/tools/open-url", post(web::open_url))
        .route_layer(middleware::from_fn_with_state(state.clone(), limit::guard))
        .route("/api/health", get(health))
        .layer(DefaultBodyLimit::max(state.body_limit));
    let api = match cors(&state.allowed_origins) {
        Some(layer) => api.layer(layer),
        None => api,
    };
    let index = state.static_dir.join("index.html");
    api.fallback_service(ServeDir::new(&state.static_dir).fallback(ServeFile::new(index)))
        .layer(middleware::from_fn_with_state(state.clone(), gate::check))
        .layer(middleware::from_fn(log::requests))
        .with_state(state)
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
            .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
            .expose_headers([header::RETRY_AFTER])
            .max_age(Duration::from_secs(600)),
    )
}

async fn health(AxumState(state): AxumState<Arc<AppState>>) -> Json<Value> {
    let mut upstream = None;
    if let Some(u) = state.upstreams.current() {
        let (available, chosen) = describe_models(&state.http, &u).await;
        let (main, sub) = chosen.map_or((None, None), |(m, s)| (Some(m), Some(s)));
        upstream = Some(json!({
            "url": u.display_base(),
            "source": u.source,
            "detected": u.detected(),
            "models": { "main": main, "sub": sub, "available": available },
        }));
    }
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "chat": { "configured": upstream.is_some(), "upstream": upstream },
        "search": { "configured": state.search_url.is_some(), "url": state.search_url.as_deref().map(redact_url) },
        "clientTokenRequired": state.client_token.is_some(),
    }))
}
