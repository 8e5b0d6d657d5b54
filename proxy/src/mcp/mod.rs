//! MCP servers through the proxy: `/api/mcp/<name>` relays MCP's Streamable
//! HTTP transport to the server the operator configured under that name,
//! with that server's token, behind the same gate as `/api/chat`.
//!
//! * `config.rs`: which servers, which tokens (`ATELIER_MCP_SERVERS`,
//!   `ATELIER_MCP_TOKEN_<NAME>`), checked at start.
//! * `relay.rs`: the handler: which headers cross in each direction, where
//!   the request goes (the configured URL, exactly), how failures answer.
//! * `stream.rs`: the answer's body: secrets cut out as it passes, keepalives
//!   and idle limits.
//! * `reach.rs`: whether each server answers, for `/api/health`.
//!
//! The relay keeps no state of its own: the MCP session lives at the MCP
//! server (its `Mcp-Session-Id` passes through), so any replica of the proxy
//! can relay any request.

pub mod config;
mod reach;
pub mod relay;
mod stream;

use std::time::Duration;

use axum::http::header;
use serde_json::{json, Value};

use crate::settings::Settings;
use crate::upstream::redact_url;
use config::ServerConfig;
use reach::{Reach, Reachability};
use stream::Redactor;

/// One configured MCP server and what the proxy knows of it.
pub struct McpServer {
    pub config: ServerConfig,
    reach: Reachability,
}

/// The configured MCP servers and the client that reaches them.
pub struct McpServers {
    servers: Vec<McpServer>,
    /// Cuts every server's secrets out of what goes back to the browser
    /// (two servers may be one program behind two paths).
    redactor: Redactor,
    /// No redirects (a token must never follow one), no total timeout (an
    /// event stream may stay open): answers are timed by `stream.rs`.
    http: reqwest::Client,
    /// Most time to the answer's headers, and between chunks of a JSON answer
    /// or of a POST's event stream (`ATELIER_UPSTREAM_TIMEOUT`, as for chat).
    answer_timeout: Duration,
    /// Most silence from the server on a notification stream (`ATELIER_MCP_STREAM_IDLE`).
    stream_idle: Duration,
    /// `ATELIER_MCP_TOKEN_*` variables that name no server (a warning at start).
    orphan_tokens: Vec<String>,
}

impl McpServers {
    /// The servers of `settings`, with tokens from the flags or the
    /// environment; an error says which setting is wrong.
    pub fn new(settings: &Settings) -> Result<McpServers, String> {
        let env = |key: &str| std::env::var(key).ok();
        let configs = config::parse(&settings.mcp_servers, &settings.mcp_tokens, &env).map_err(|e| e.to_string())?;
        let orphan_tokens =
            config::orphan_tokens(&configs, std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()));
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("atelier-proxy/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| format!("cannot build the MCP client: {e}"))?;
        let mut secrets: Vec<String> = configs.iter().flat_map(ServerConfig::secrets).collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        let servers = configs.into_iter().map(|config| McpServer { config, reach: Reachability::default() }).collect();
        Ok(McpServers {
            servers,
            redactor: Redactor::new(&secrets),
            http,
            answer_timeout: Duration::from_secs(settings.upstream_timeout.max(1)),
            stream_idle: Duration::from_secs(settings.mcp_stream_idle.max(1)),
            orphan_tokens,
        })
    }

    fn get(&self, name: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.config.name == name)
    }

    /// `[{name, reachable}]` for `/api/health` (with `error` when not
    /// reachable); never a URL or a token. Servers are asked at once.
    pub async fn health(&self) -> Vec<Value> {
        let asks = self.servers.iter().map(|server| async move {
            let reach = server.reach.current(self.probe(server)).await;
            match reach {
                Reach::Answers => json!({ "name": server.config.name, "reachable": true }),
                Reach::Fails(why) => json!({ "name": server.config.name, "reachable": false, "error": why }),
            }
        });
        futures_util::future::join_all(asks).await
    }

    async fn probe(&self, server: &McpServer) -> Reach {
        let mut call = self.http.get(server.config.url.clone()).header(header::ACCEPT, "text/event-stream");
        if let Some(token) = &server.config.token {
            call = call.bearer_auth(token);
        }
        match call.send().await {
            // Dropped unread: a stream that opened closes here.
            Ok(answer) => Reach::of_status(answer.status(), true).unwrap_or(Reach::Answers),
            Err(e) => Reach::of_error(&e),
        }
    }

    /// Prints the configured servers at start (names and URLs without
    /// credentials or query; never a token).
    pub fn describe(&self) {
        for server in &self.servers {
            let token = if server.config.token.is_some() { " with its bearer token" } else { "" };
            eprintln!(
                "atelier-proxy: MCP server {} at {}{token}, relayed at /api/mcp/{}",
                server.config.name,
                redact_url(server.config.url.as_str()),
                server.config.name
            );
        }
        for orphan in &self.orphan_tokens {
            eprintln!("atelier-proxy: {orphan} is set, but ATELIER_MCP_SERVERS names no such server: it is not used");
        }
    }
}
