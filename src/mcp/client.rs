//! `McpClient`: one MCP server over the Streamable HTTP transport, as the
//! 2025-11-25 revision of the protocol has it (2025-06-18 and 2025-03-26
//! servers are understood too).
//!
//! * `initialize` offers [`PROTOCOL_VERSION`]; the server's choice must be
//!   one of [`SUPPORTED_VERSIONS`]. Then `notifications/initialized`, and
//!   from there every request carries `MCP-Protocol-Version` and the
//!   `Mcp-Session-Id` the server gave (none for a stateless server). Only
//!   one `initialize` is under way at a time: parallel calls wait for it.
//! * Every message is its own POST; the answer is one JSON message or an
//!   event stream whose messages are read as they arrive: progress and
//!   `notifications/tools/list_changed` before the response, `ping`
//!   answered, other requests of the server refused (this client declares
//!   no capabilities).
//! * A session the server forgot (404, or the 400 some servers answer) is
//!   opened again and the request sent once more; the server never ran it.
//! * A run that aborts during a request aborts the fetch and posts
//!   `notifications/cancelled` for it (servers up to 2025-11-25 do not read
//!   a disconnect as a cancellation); an answer after that is never read.
//!
//! Messages are written as text by hand rather than with `json!`: a `json!`
//! literal is code that builds its value node by node, and the package
//! pays for bytes.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use serde_json::Value;

use super::content::{CallResult, McpTool};
use super::error::{McpError, Result};
use super::transport::{AnswerBody, HttpAnswer, HttpMethod, HttpRequest, McpTransport};
use crate::cancel::{until_cancelled, CancelToken};
use crate::llm::{SseDecoder, MAX_EVENT_BYTES};

/// The protocol version `initialize` offers.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The versions this client speaks: the Streamable HTTP transport's.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION, "2025-06-18", "2025-03-26"];

/// At most this many pages of `tools/list` are read, and this many tools
/// kept: a server whose cursor never ends cannot hold the run.
pub const MAX_TOOL_PAGES: usize = 32;
pub const MAX_TOOLS: usize = 256;

/// How long an aborted run waits for its `notifications/cancelled` to go out.
const CANCEL_NOTICE_WAIT: Duration = Duration::from_secs(2);

/// A `notifications/progress` of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The session as the server set it up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Session {
    /// The negotiated protocol version; `None` before `initialize`.
    version: Option<String>,
    id: Option<String>,
}

/// A client of one MCP server.
pub struct McpClient {
    transport: Box<dyn McpTransport>,
    session: RefCell<Session>,
    next_id: Cell<u64>,
    /// Fired when the `initialize` under way ends (others wait on it).
    connecting: RefCell<Option<CancelToken>>,
    tools_changed: Cell<bool>,
}

/// Ends an `initialize` however its future ends (a dropped run included).
struct Connecting<'a>(&'a McpClient, CancelToken);

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        self.0.connecting.borrow_mut().take();
        self.1.cancel();
    }
}

impl McpClient {
    /// A client that talks through `transport`; nothing is sent yet.
    pub fn new(transport: Box<dyn McpTransport>) -> McpClient {
        McpClient {
            transport,
            session: RefCell::default(),
            next_id: Cell::new(1),
            connecting: RefCell::default(),
            tools_changed: Cell::new(false),
        }
    }

    /// The negotiated protocol version, once connected.
    pub fn protocol_version(&self) -> Option<String> {
        self.session.borrow().version.clone()
    }

    /// Whether the server said its tools changed since the last call of this
    /// method (`notifications/tools/list_changed` on any stream read).
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed.replace(false)
    }

    /// Opens the session (`initialize`, then `notifications/initialized`)
    /// unless it is open.
    pub async fn connect(&self, cancel: &CancelToken) -> Result<()> {
        loop {
            if self.session.borrow().version.is_some() {
                return Ok(());
            }
            let under_way = self.connecting.borrow().clone();
            match under_way {
                Some(done) => until_cancelled(cancel, done.cancelled()).await.ok_or(McpError::Aborted)?,
                None => break,
            }
        }
        let done = CancelToken::new();
        *self.connecting.borrow_mut() = Some(done.clone());
        let _connecting = Connecting(self, done);
        let fresh = Session::default();
        let params = format!(
            r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"atelier-agent","version":"{}"}}}}"#,
            env!("CARGO_PKG_VERSION")
        );
        let id = self.id();
        let answer = self.post(&fresh, message(Some(id), "initialize", &params), "initialize", None, cancel).await?;
        // The id goes back in a header: visible ASCII only (the spec's rule).
        let id_ok = |s: &String| s.bytes().all(|b| b.is_ascii_graphic());
        if !answer.session_id.as_ref().is_none_or(id_ok) {
            return Err(McpError::Malformed("a session id with characters a header cannot carry".into()));
        }
        let session = Session { id: answer.session_id.clone(), ..fresh };
        let result = self.answer(&session, answer, id, &mut |_| {}, cancel).await?;
        let version = result["protocolVersion"].as_str().unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(McpError::Version(version.to_owned()));
        }
        let session = Session { version: Some(version.to_owned()), ..session };
        self.notify(&session, "notifications/initialized", "{}", cancel).await?;
        *self.session.borrow_mut() = session;
        Ok(())
    }

    /// Every tool of the server (`tools/list`, page after page), sorted by
    /// name so the tools a model is offered stay byte for byte the same.
    pub async fn tools(&self, cancel: &CancelToken) -> Result<Vec<McpTool>> {
        let mut tools: Vec<McpTool> = Vec::new();
        let mut cursors: Vec<String> = Vec::new();
        for _ in 0..MAX_TOOL_PAGES {
            let members =
                cursors.last().map(|c| format!(r#""cursor":{}"#, Value::from(c.as_str()))).unwrap_or_default();
            let page = self.request("tools/list", &members, None, &mut |_| {}, cancel).await?;
            tools.extend(page["tools"].as_array().into_iter().flatten().filter_map(McpTool::from_value));
            match page["nextCursor"].as_str() {
                Some(next) if !cursors.iter().any(|c| c == next) && tools.len() < MAX_TOOLS => {
                    cursors.push(next.to_owned())
                }
                _ => break,
            }
        }
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools.dedup_by(|a, b| a.name == b.name);
        tools.truncate(MAX_TOOLS);
        Ok(tools)
    }

    /// Calls the tool `name` with `arguments` (a JSON object);
    /// `on_progress` hears its progress notifications.
    pub async fn call(
        &self,
        name: &str,
        arguments: &Value,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<CallResult> {
        let arguments = if arguments.is_object() { arguments.to_string() } else { "{}".to_owned() };
        let members = format!(r#""name":{},"arguments":{arguments}"#, Value::from(name));
        let result = self.request("tools/call", &members, Some(name), on_progress, cancel).await?;
        Ok(CallResult::from_value(&result))
    }

    /// Reads the server's notification stream (GET) until it ends; `false`
    /// when the server offers none (405).
    pub async fn listen(&self, cancel: &CancelToken) -> Result<bool> {
        self.connect(cancel).await?;
        let session = self.session.borrow().clone();
        let request =
            HttpRequest { method: HttpMethod::Get, headers: headers(&session, "text/event-stream"), body: None };
        let mut answer = self.transport.send(request, cancel).await?;
        if answer.status == 405 {
            return Ok(false);
        }
        self.check(&session, &mut answer).await?;
        self.stream(&session, &mut *answer.body, None, &mut |_| {}, cancel).await?;
        Ok(true)
    }

    /// Ends the session at the server (DELETE; a server may refuse with
    /// 405, and nothing is waited for beyond the answer's head).
    pub async fn close(&self, cancel: &CancelToken) {
        let session = self.session.take();
        if session.id.is_some() {
            let request =
                HttpRequest { method: HttpMethod::Delete, headers: headers(&session, "application/json"), body: None };
            let _ = self.transport.send(request, cancel).await;
        }
    }

    fn id(&self) -> u64 {
        self.next_id.replace(self.next_id.get() + 1)
    }

    /// A request in the open session (opened first, and once more when the
    /// server forgot it); its result. `members` are the params' fields, as
    /// JSON text without the braces.
    async fn request(
        &self,
        method: &str,
        members: &str,
        name: Option<&str>,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<Value> {
        let mut reopened = false;
        loop {
            self.connect(cancel).await?;
            let session = self.session.borrow().clone();
            let id = self.id();
            // The request's id is its progress token: unique in the session.
            let comma = if members.is_empty() { "" } else { "," };
            let params = format!(r#"{{"_meta":{{"progressToken":{id}}}{comma}{members}}}"#);
            let outcome = match self.post(&session, message(Some(id), method, &params), method, name, cancel).await {
                Ok(answer) => self.answer(&session, answer, id, on_progress, cancel).await,
                Err(e) => Err(e),
            };
            match outcome {
                Err(McpError::SessionExpired) if !reopened => {
                    reopened = true;
                    // A parallel call may have opened a new session already.
                    let mut current = self.session.borrow_mut();
                    if *current == session {
                        *current = Session::default();
                    }
                }
                Err(McpError::Aborted) => {
                    self.cancelled(&session, id).await;
                    return Err(McpError::Aborted);
                }
                other => return other,
            }
        }
    }

    /// Tells the server that request `id` is abandoned, waiting at most
    /// [`CANCEL_NOTICE_WAIT`] (a hung server must not hold the abort).
    async fn cancelled(&self, session: &Session, id: u64) {
        let quiet = CancelToken::new();
        let params = format!(r#"{{"requestId":{id},"reason":"the run was aborted"}}"#);
        let notice = std::pin::pin!(self.notify(session, "notifications/cancelled", &params, &quiet));
        let _ = futures_util::future::select(notice, std::pin::pin!(crate::platform::sleep(CANCEL_NOTICE_WAIT))).await;
        quiet.cancel();
    }

    /// Posts a notification (or a response to the server): 202 expected.
    async fn notify(&self, session: &Session, method: &str, params: &str, cancel: &CancelToken) -> Result<()> {
        let mut answer = self.post(session, message(None, method, params), method, None, cancel).await?;
        self.check(session, &mut answer).await
    }

    async fn post(
        &self,
        session: &Session,
        body: String,
        method: &str,
        name: Option<&str>,
        cancel: &CancelToken,
    ) -> Result<HttpAnswer> {
        let mut headers = headers(session, "application/json, text/event-stream");
        headers.push(("content-type", "application/json".into()));
        // The 2026 revision routes on these; older servers ignore them. A
        // header value must be visible ASCII.
        if !method.is_empty() {
            headers.push(("mcp-method", method.into()));
        }
        if let Some(name) = name.filter(|n| n.bytes().all(|b| b.is_ascii_graphic())) {
            headers.push(("mcp-name", name.into()));
        }
        self.transport.send(HttpRequest { method: HttpMethod::Post, headers, body: Some(body) }, cancel).await
    }

    /// An HTTP error answer as the client's error.
    async fn check(&self, session: &Session, answer: &mut HttpAnswer) -> Result<()> {
        if (200..300).contains(&answer.status) {
            return Ok(());
        }
        let body = read_all(&mut *answer.body, 64 * 1024).await.unwrap_or_default();
        Err(McpError::from_http(answer.status, &String::from_utf8_lossy(&body), session.id.is_some()))
    }

    /// Reads the answer to request `id`: its result.
    async fn answer(
        &self,
        session: &Session,
        mut answer: HttpAnswer,
        id: u64,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<Value> {
        self.check(session, &mut answer).await?;
        let result = if answer.content_type.starts_with("text/event-stream") {
            self.stream(session, &mut *answer.body, Some(id), on_progress, cancel).await?
        } else {
            let body = read_all(&mut *answer.body, MAX_EVENT_BYTES).await?;
            let message = serde_json::from_slice(&body).map_err(|e| McpError::Malformed(e.to_string()))?;
            self.message(session, message, Some(id), on_progress, cancel).await?
        };
        result.unwrap_or_else(|| Err(McpError::Malformed("the server ended its answer without a result".into())))
    }

    /// Reads an event stream; the result of request `id` when it comes
    /// (reading stops there), `None` when the stream ends first.
    async fn stream(
        &self,
        session: &Session,
        body: &mut dyn AnswerBody,
        id: Option<u64>,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<Option<Result<Value>>> {
        let mut decoder = SseDecoder::new();
        loop {
            let chunk = body.chunk().await?;
            let events = match &chunk {
                Some(bytes) => decoder.feed(bytes).map_err(|e| McpError::Malformed(e.to_string()))?,
                None => decoder.finish().into_iter().collect(),
            };
            // Empty events prime a resumable stream; other kinds are not JSON-RPC.
            for event in events.into_iter().filter(|e| e.event == "message" && !e.data.trim().is_empty()) {
                let message = serde_json::from_str(&event.data).map_err(|e| McpError::Malformed(e.to_string()))?;
                if let Some(result) = self.message(session, message, id, on_progress, cancel).await? {
                    return Ok(Some(result));
                }
            }
            if chunk.is_none() {
                return Ok(None);
            }
        }
    }

    /// Handles one message from the server: the response to `id` is
    /// returned; notifications are heard; the server's requests answered.
    async fn message(
        &self,
        session: &Session,
        message: Value,
        id: Option<u64>,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<Option<Result<Value>>> {
        let params = &message["params"];
        match (message["method"].as_str(), &message["id"]) {
            (Some("notifications/progress"), _) => {
                if let (Some(token), Some(progress)) = (id, params["progress"].as_f64()) {
                    if params["progressToken"] == token {
                        let message = params["message"].as_str().map(str::to_owned);
                        on_progress(Progress { progress, total: params["total"].as_f64(), message });
                    }
                }
            }
            (Some("notifications/tools/list_changed"), _) => self.tools_changed.set(true),
            (Some(method), request) if !request.is_null() => {
                let reply = match method {
                    "ping" => format!(r#"{{"jsonrpc":"2.0","id":{request},"result":{{}}}}"#),
                    _ => format!(
                        r#"{{"jsonrpc":"2.0","id":{request},"error":{{"code":-32601,"message":"not supported by this client"}}}}"#
                    ),
                };
                let mut answer = self.post(session, reply, "", None, cancel).await?;
                self.check(session, &mut answer).await?;
            }
            (None, answered) if id.is_some_and(|id| *answered == id) => {
                let error = &message["error"];
                return Ok(Some(if error.is_object() {
                    let text = error["message"].as_str().unwrap_or_default().to_owned();
                    Err(McpError::Rpc { code: error["code"].as_i64().unwrap_or(0), message: text })
                } else {
                    Ok(message["result"].clone())
                }));
            }
            // Other notifications (logging, resources) and stale answers.
            _ => {}
        }
        Ok(None)
    }
}

/// The headers of every request in `session`.
fn headers(session: &Session, accept: &str) -> Vec<(&'static str, String)> {
    let mut headers = vec![("accept", accept.to_owned())];
    if let Some(version) = &session.version {
        headers.push(("mcp-protocol-version", version.clone()));
    }
    if let Some(id) = &session.id {
        headers.push(("mcp-session-id", id.clone()));
    }
    headers
}

/// A JSON-RPC message: a request when it has an `id`, else a notification.
fn message(id: Option<u64>, method: &str, params: &str) -> String {
    let id = id.map(|id| format!(r#""id":{id},"#)).unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0",{id}"method":"{method}","params":{params}}}"#)
}

/// The whole body, refused beyond `limit` bytes.
pub(super) async fn read_all(body: &mut dyn AnswerBody, limit: usize) -> Result<Vec<u8>> {
    let mut all = Vec::new();
    while let Some(chunk) = body.chunk().await? {
        all.extend_from_slice(&chunk);
        if all.len() > limit {
            return Err(McpError::Malformed(format!("an answer longer than {limit} bytes")));
        }
    }
    Ok(all)
}
