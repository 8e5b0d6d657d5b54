//! Settings: each is a CLI flag with a matching `ATELIER_*` environment
//! variable. Keys are never printed (clap hides their values in `--help`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgAction, Parser};

/// How atelier-proxy is configured.
#[derive(Debug, Clone, Parser)]
#[command(name = "atelier-proxy", version, about)]
pub struct Settings {
    /// Address to listen on.
    #[arg(long, env = "ATELIER_BIND", default_value = "127.0.0.1:8787")]
    pub bind: SocketAddr,

    /// Base URL of an OpenAI-compatible API (OpenAI, OpenRouter, Gemini, Anthropic,
    /// Ollama, llama.cpp, vLLM...), e.g. http://127.0.0.1:11434/v1.
    #[arg(long, env = "ATELIER_UPSTREAM_URL")]
    pub upstream_url: Option<String>,

    /// API key sent to the upstream as a bearer token.
    #[arg(long, env = "ATELIER_UPSTREAM_KEY", hide_env_values = true)]
    pub upstream_key: Option<String>,

    /// Model the alias "main" stands for.
    #[arg(long, env = "ATELIER_MODEL_MAIN")]
    pub model_main: Option<String>,

    /// Model the alias "sub" stands for (cheap, fast tasks: routing, summaries).
    #[arg(long, env = "ATELIER_MODEL_SUB")]
    pub model_sub: Option<String>,

    /// Model the alias "embed" stands for (`/api/embeddings`); else the
    /// upstream's first embedding model.
    #[arg(long, env = "ATELIER_MODEL_EMBED")]
    pub model_embed: Option<String>,

    /// Tavily-compatible search endpoint (POST {query, max_results}).
    #[arg(long, env = "ATELIER_SEARCH_URL")]
    pub search_url: Option<String>,

    /// Key of the search API.
    #[arg(long, env = "ATELIER_SEARCH_KEY", hide_env_values = true)]
    pub search_key: Option<String>,

    /// Origins allowed to call the API cross-origin (comma-separated, or "*").
    /// Empty: same-origin only.
    #[arg(long, env = "ATELIER_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Host names (with or without `:port`) the proxy answers besides its own
    /// address, e.g. the domain of a reverse proxy in front of it (comma-separated,
    /// or "*" to turn the check off). Requests for any other `Host` get 421.
    #[arg(long, env = "ATELIER_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Forward any model name a client asks for. Off: only "main", "sub", the
    /// configured models and the models the upstream lists.
    #[arg(long, env = "ATELIER_ALLOW_ANY_MODEL", default_value_t = false, action = ArgAction::Set)]
    pub allow_any_model: bool,

    /// Bearer token clients must send on /api and /v1 (optional).
    #[arg(long, env = "ATELIER_CLIENT_TOKEN", hide_env_values = true)]
    pub client_token: Option<String>,

    /// Directory of the built demo app served at `/`.
    #[arg(long, env = "ATELIER_STATIC_DIR", default_value = "www/dist")]
    pub static_dir: PathBuf,

    /// Requests per minute per client IP on /api and /v1 (0 turns the limit off).
    #[arg(long, env = "ATELIER_RATE_LIMIT", default_value_t = 120)]
    pub rate_limit: u32,

    /// Largest accepted request body, in bytes.
    #[arg(long, env = "ATELIER_BODY_LIMIT", default_value_t = 8 * 1024 * 1024)]
    pub body_limit: usize,

    /// Seconds to wait for an upstream's response headers (and between streamed chunks).
    #[arg(long, env = "ATELIER_UPSTREAM_TIMEOUT", default_value_t = 120)]
    pub upstream_timeout: u64,

    /// With no upstream set, look for a local OpenAI-compatible server on its
    /// usual loopback port (Ollama 11434, llama.cpp 8080, LM Studio 1234).
    /// A detected server never receives ATELIER_UPSTREAM_KEY.
    #[arg(long, env = "ATELIER_AUTODETECT", default_value_t = true, action = ArgAction::Set)]
    pub autodetect: bool,

    /// Loopback ports autodetection probes, in order (default: the usual ones).
    #[arg(long, env = "ATELIER_LOCAL_PORTS", value_delimiter = ',')]
    pub local_ports: Vec<u16>,

    /// Milliseconds one page may take to convert to Markdown (open-url);
    /// a page over it is answered with a coded error (422 page_too_complex).
    #[arg(long, env = "ATELIER_PAGE_TIMEOUT_MS", default_value_t = 20_000)]
    pub page_timeout_ms: u64,

    /// Most tokens of context the proxy asks a local Ollama for
    /// (`options.num_ctx`, fitted to each request; the model's trained length
    /// caps it, and a model the server already runs with more keeps that).
    /// 32,768 tokens hold about 4.5 GiB of KV cache for an 8B model (f16).
    #[arg(long, env = "ATELIER_OLLAMA_MAX_CONTEXT", default_value_t = 32_768)]
    pub ollama_max_context: u64,
    /// MCP servers relayed at `/api/mcp/<name>`: comma-separated `name=url`
    /// (names of 1 to 32 of a-z, 0-9 and -), e.g. `notes=http://127.0.0.1:3001/mcp`.
    /// Loopback and private addresses are allowed: the operator chose them.
    #[arg(long, env = "ATELIER_MCP_SERVERS", value_delimiter = ',')]
    pub mcp_servers: Vec<String>,

    /// Bearer token of one MCP server, `name=token` (repeatable); sent to that
    /// server only. The environment variable `ATELIER_MCP_TOKEN_<NAME>` (the
    /// name upper-cased, `-` as `_`) does the same.
    #[arg(long = "mcp-token", value_name = "NAME=TOKEN")]
    pub mcp_tokens: Vec<String>,

    /// Seconds an MCP server's notification stream (the GET stream, or the
    /// answer to `subscriptions/listen`) may stay silent before the relay ends
    /// it (the client opens it again); quiet streams get a keepalive comment
    /// every 15 s meanwhile. Other answers wait ATELIER_UPSTREAM_TIMEOUT.
    #[arg(long, env = "ATELIER_MCP_STREAM_IDLE", default_value_t = 300)]
    pub mcp_stream_idle: u64,

    /// Test-only: socket addresses open-url may fetch although they are not public.
    #[arg(long, env = "ATELIER_OPEN_URL_ALLOW", value_delimiter = ',', hide = true)]
    pub open_url_allow: Vec<SocketAddr>,
}

/// An empty environment variable means "not set".
pub fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}
