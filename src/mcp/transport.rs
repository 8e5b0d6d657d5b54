//! What the client needs of HTTP: one request to the server's endpoint and
//! its answer, whose body arrives chunk by chunk (an event stream is read as
//! it comes). The browser's adapter sends it through the proxy's relay
//! (`relay.rs`); the native tests script it.

use async_trait::async_trait;

use super::error::Result;
use crate::cancel::CancelToken;

/// The HTTP method of a request (Streamable HTTP uses these three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// A JSON-RPC message.
    Post,
    /// The server's notification stream.
    Get,
    /// The end of the session.
    Delete,
}

/// One request to the server's MCP endpoint, every header given (the
/// transport adds only its own credentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: HttpMethod,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<String>,
    /// The transport abandons the request after this long (its answer
    /// included), failing it; `None`: the run's cancellation and the
    /// relay's own limits end it.
    pub timeout: Option<std::time::Duration>,
}

/// The answer's head, and its body to read.
pub struct HttpAnswer {
    pub status: u16,
    /// `Content-Type` ("" when absent).
    pub content_type: String,
    /// `Mcp-Session-Id`, when the server sent one.
    pub session_id: Option<String>,
    pub body: Box<dyn AnswerBody>,
}

/// The body of an answer, as it arrives.
#[async_trait(?Send)]
pub trait AnswerBody {
    /// The next chunk, `None` at the end. A cancelled run ends the read with
    /// [`super::McpError::Aborted`].
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>>;
}

/// Sends requests to one MCP server.
#[async_trait(?Send)]
pub trait McpTransport {
    /// Sends `request`; resolves once the answer's head has arrived.
    /// `cancel` aborts the request (and the reading of its body).
    async fn send(&self, request: HttpRequest, cancel: &CancelToken) -> Result<HttpAnswer>;
}
