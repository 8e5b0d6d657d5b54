//! What the handlers share: settings turned into clients, limits and the
//! gate, built once at start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::gate::Gate;
use crate::limit::RateLimiter;
use crate::mcp::McpServers;
use crate::settings::{non_empty, Settings};
use crate::upstream::Upstreams;

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
    /// The MCP servers relayed at `/api/mcp/<name>`.
    pub mcp: McpServers,
    /// Time budget of one page's conversion to Markdown.
    pub page_timeout: Duration,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) static_dir: PathBuf,
    pub(crate) body_limit: usize,
}

/// The state, built once at start.
pub struct State(pub(crate) Arc<AppState>);

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
        let mcp = McpServers::new(&settings)?;
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
            mcp,
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
        s.mcp.describe();
    }
}
