//! The Model Context Protocol client: the agent uses the tools of the MCP
//! servers the proxy relays (`/api/mcp/<name>`), whose tokens stay on the
//! proxy.
//!
//! * [`McpClient`] (`client.rs`): JSON-RPC over the Streamable HTTP
//!   transport: `initialize` with version negotiation, `tools/list` with
//!   pagination, `tools/call` with progress, cancellation, sessions opened
//!   again when the server forgets them, answers as JSON or as an event
//!   stream (read by the crate's [`crate::llm::SseDecoder`]).
//! * [`McpTransport`] (`transport.rs`): what the client needs of HTTP. In
//!   the browser, `RelayTransport` (`relay.rs`, the only file here that
//!   touches web-sys) sends through the proxy's relay.
//! * `content.rs`: tool definitions, results as text for the model, the
//!   relayed servers of `/api/health`.
//! * [`McpServers`] (`servers.rs`): which servers answer and their tools,
//!   checked at a run's start and kept briefly, behind [`McpRelay`] (the
//!   proxy, `ProxyRelay` in the browser).
//! * `names.rs`: the names models call the tools by ([`agent_tool_name`]).
//!
//! Written for the package's size: the official JS SDK is about 90 KB gzip;
//! this client reads messages field by field from `serde_json::Value`s (no
//! derived decoders) and writes them as text.

mod client;
mod content;
mod error;
mod names;
mod servers;
mod transport;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod relay;

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use client::{McpClient, Progress, LIST_TIMEOUT, MAX_TOOLS, MAX_TOOL_PAGES, PROTOCOL_VERSION, SUPPORTED_VERSIONS};
pub use content::{relayed_servers, CallResult, McpTool, RelayedServer};
pub use error::{McpError, Result};
pub use names::{agent_tool_name, MAX_NAME, PREFIX};
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use relay::{fetch_relayed_servers, ProxyRelay, RelayTransport};
pub use servers::{McpRelay, McpServer, McpServers, ServerStatus, CHECK_TTL};
pub use transport::{AnswerBody, HttpAnswer, HttpMethod, HttpRequest, McpTransport};
