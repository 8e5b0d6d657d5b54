//! Why an MCP exchange failed. Each failure of a tool call reaches the model
//! as a tool error with [`McpError::code`]; none is a crash.

use serde_json::Value;

use crate::error::ErrorCode;

/// `Result` of the MCP client.
pub type Result<T> = std::result::Result<T, McpError>;

/// Why an MCP exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The proxy answered for itself (its coded error, e.g.
    /// `mcp_server_not_found`, `mcp_unreachable`, `mcp_timeout`, `mcp_auth`,
    /// `mcp_redirect`, `rate_limited`, `unauthorized`).
    #[error("the proxy could not relay to the MCP server (HTTP {status}, {kind}): {message}")]
    Relay { status: u16, kind: String, message: String },
    /// The MCP server answered with an HTTP error.
    #[error("the MCP server answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    /// The server no longer knows the session (404, or 400 from some
    /// servers); the client opens a new one once.
    #[error("the MCP server ended the session")]
    SessionExpired,
    /// The server answered the request with a JSON-RPC error.
    #[error("the MCP server refused the request: {message} (JSON-RPC {code})")]
    Rpc { code: i64, message: String },
    /// An answer that is not MCP (or one the server ended without a result,
    /// or a protocol version this client does not speak).
    #[error("malformed MCP answer: {0}")]
    Malformed(String),
    /// The proxy could not be reached.
    #[error("cannot reach the proxy: {0}")]
    Network(String),
    /// The tool is not offered now (its server does not answer, or the
    /// person turned it off): why, in the person's words.
    #[error("{0}")]
    Unavailable(String),
    /// The run was cancelled.
    #[error("aborted")]
    Aborted,
}

impl McpError {
    /// Stable machine-readable code (the proxy's own for [`McpError::Relay`],
    /// when the list has it: its gate's other refusals are `bad_request`,
    /// or `upstream_unavailable` for a 5xx).
    pub fn code(&self) -> ErrorCode {
        match self {
            McpError::Relay { kind, status, .. } => match (ErrorCode::from_name(kind), kind.as_str()) {
                (Some(code), _) => code,
                (None, "unauthorized") => ErrorCode::Auth,
                _ if *status >= 500 => ErrorCode::UpstreamUnavailable,
                _ => ErrorCode::BadRequest,
            },
            McpError::Http { .. } => ErrorCode::McpHttp,
            McpError::SessionExpired => ErrorCode::McpSessionExpired,
            McpError::Rpc { .. } => ErrorCode::McpRpc,
            McpError::Malformed(_) => ErrorCode::MalformedResponse,
            McpError::Network(_) => ErrorCode::UpstreamUnavailable,
            McpError::Unavailable(_) => ErrorCode::McpUnavailable,
            McpError::Aborted => ErrorCode::Aborted,
        }
    }

    /// Whether the way to the server is gone (the proxy cannot reach it,
    /// no longer relays it, or cannot be reached itself), rather than one
    /// request refused: its tools are no longer offered.
    pub fn server_gone(&self) -> bool {
        matches!(self, McpError::Network(_))
            || matches!(self, McpError::Relay { status, .. } if *status == 404 || *status >= 500)
    }

    /// Reads an HTTP error answer. The proxy's own errors are
    /// `{"error": {"type", "message"}}`; a server's are JSON-RPC errors or
    /// text. A 404 or 400 to a request that carried a session id means the
    /// server forgot the session (server-everything answers 400).
    pub(crate) fn from_http(status: u16, body: &str, had_session: bool) -> McpError {
        let json: Value = serde_json::from_str(body).unwrap_or_default();
        let error = &json["error"];
        let message = error["message"].as_str().map(str::to_owned);
        if let Some(kind) = error["type"].as_str() {
            let message = message.unwrap_or_default();
            return McpError::Relay { status, kind: kind.to_owned(), message };
        }
        if had_session && matches!(status, 400 | 404) {
            return McpError::SessionExpired;
        }
        let message = message.unwrap_or_else(|| {
            let body = body.trim();
            let mut end = body.len().min(300);
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            body[..end].to_owned()
        });
        McpError::Http { status, message }
    }
}
