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
//! Written for the package's size. Messages are text put together by hand
//! (a `json!` literal is code that builds its value node by node, a
//! `format!` a formatting call per site). A request is one loop of steps
//! (`initialize`, `initialized`, the request, its cancellation) around one
//! exchange, rather than nested `async fn`s: each nested state machine
//! costs the package its own code.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use serde_json::Value;

use super::content::{items, CallResult, McpTool};
use super::error::{McpError, Result};
use super::transport::{HttpMethod, HttpRequest, McpTransport};
use crate::cancel::{until_cancelled, CancelToken};
use crate::llm::{SseDecoder, MAX_EVENT_BYTES};

/// The protocol version `initialize` offers (a macro, for `concat!`).
macro_rules! offered_version {
    () => {
        "2025-11-25"
    };
}
pub const PROTOCOL_VERSION: &str = offered_version!();

/// The versions this client speaks: the Streamable HTTP transport's.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION, "2025-06-18", "2025-03-26"];

/// At most this many pages of `tools/list` are read, and this many tools
/// kept: a server whose cursor never ends cannot hold the run.
pub const MAX_TOOL_PAGES: usize = 32;
pub const MAX_TOOLS: usize = 256;

/// The params of `initialize`: this client declares no capabilities (no
/// sampling, elicitation or roots).
const INITIALIZE_PARAMS: &str = concat!(
    r#"{"protocolVersion":""#,
    offered_version!(),
    r#"","capabilities":{},"clientInfo":{"name":"atelier-agent","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}}"#
);

/// What `McpClient::request` sends next.
enum Step {
    Initialize,
    /// `notifications/initialized`, for the session `initialize` opened.
    Initialized(Session),
    Request,
    /// `notifications/cancelled` for the request of this id, in its session.
    Cancelled(Session, u64),
}

/// How long opening a session and each page of `tools/list` may take: a
/// server that accepts connections and then says nothing must not hold a
/// run's start. (A tool call has no limit of its own: tools may take long;
/// the run's abort ends it.)
pub const LIST_TIMEOUT: Duration = Duration::from_secs(10);

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
        self.request("", "", None, Some(LIST_TIMEOUT), &mut |_| {}, cancel).await.map(drop)
    }

    /// Every tool of the server (`tools/list`, page after page), sorted by
    /// name so the tools a model is offered stay byte for byte the same.
    pub async fn tools(&self, cancel: &CancelToken) -> Result<Vec<McpTool>> {
        let mut tools: Vec<McpTool> = Vec::new();
        let mut cursors: Vec<String> = Vec::new();
        for _ in 0..MAX_TOOL_PAGES {
            let members = cursors.last().map(|c| [r#""cursor":"#, &Value::from(c.as_str()).to_string()].concat());
            let members = members.unwrap_or_default();
            let page = self.request("tools/list", &members, None, Some(LIST_TIMEOUT), &mut |_| {}, cancel).await?;
            for tool in items(&page["tools"]) {
                let Some(tool) = McpTool::from_value(tool) else {
                    continue;
                };
                // In name order, each name once (a sort of its own would
                // compile a merge sort for this one type).
                let at = tools.partition_point(|t| t.name < tool.name);
                if tools.get(at).is_none_or(|t| t.name != tool.name) && tools.len() < MAX_TOOLS {
                    tools.insert(at, tool);
                }
            }
            match page["nextCursor"].as_str() {
                Some(next) if !cursors.iter().any(|c| c == next) && tools.len() < MAX_TOOLS => {
                    cursors.push(next.to_owned())
                }
                _ => break,
            }
        }
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
        let members = [r#""name":"#, &Value::from(name).to_string(), r#","arguments":"#, &arguments].concat();
        let result = self.request("tools/call", &members, Some(name), None, on_progress, cancel).await?;
        Ok(CallResult::from_value(&result))
    }

    /// Reads the server's notification stream (GET) until it ends; `false`
    /// when the server offers none (405).
    pub async fn listen(&self, cancel: &CancelToken) -> Result<bool> {
        self.connect(cancel).await?;
        let session = self.session.borrow().clone();
        let request = HttpRequest {
            method: HttpMethod::Get,
            headers: headers(&session, "text/event-stream"),
            body: None,
            timeout: None,
        };
        match self.exchange(&session, request, None, &mut |_| {}, cancel).await {
            Err(McpError::Http { status: 405, .. }) => Ok(false),
            other => other.map(|_| true),
        }
    }

    /// Ends the session at the server (DELETE; a server may refuse with
    /// 405, and nothing is waited for beyond the answer's head).
    pub async fn close(&self, cancel: &CancelToken) {
        let session = self.session.take();
        if session.id.is_some() {
            let request = HttpRequest {
                method: HttpMethod::Delete,
                headers: headers(&session, "application/json"),
                body: None,
                timeout: None,
            };
            let _ = self.transport.send(request, cancel).await;
        }
    }

    /// A request in the session, which is opened first when it is not, and
    /// once more when the server forgot it; its result. `members` are the
    /// params' fields as JSON text without the braces. An empty `method`
    /// only opens the session.
    async fn request(
        &self,
        method: &str,
        members: &str,
        name: Option<&str>,
        timeout: Option<Duration>,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<Value> {
        let mut reopened = false;
        let mut step = Step::Request;
        // Held while this call opens the session (parallel calls wait).
        let mut connecting: Option<Connecting> = None;
        loop {
            let current = self.session.borrow().clone();
            if matches!(step, Step::Request) && current.version.is_none() {
                let under_way = self.connecting.borrow().clone();
                if let Some(done) = under_way {
                    until_cancelled(cancel, done.cancelled()).await.ok_or(McpError::Aborted)?;
                    continue;
                }
                let done = CancelToken::new();
                *self.connecting.borrow_mut() = Some(done.clone());
                connecting.replace(Connecting(self, done));
                step = Step::Initialize;
            }
            if matches!(step, Step::Request) && method.is_empty() {
                return Ok(Value::Null);
            }
            // Nothing is sent for a run aborted already (there would be
            // nothing to cancel at the server).
            if !matches!(step, Step::Cancelled(..)) && cancel.is_cancelled() {
                return Err(McpError::Aborted);
            }
            let id = self.next_id.replace(self.next_id.get() + 1);
            let (session, mut request, id) = match &step {
                Step::Initialize => {
                    let fresh = Session::default();
                    let request = post(&fresh, Some(id), "initialize", INITIALIZE_PARAMS, None);
                    (fresh, request, Some(id))
                }
                Step::Initialized(new) => (new.clone(), post(new, None, "notifications/initialized", "{}", None), None),
                // The request's id is its progress token: unique in the session.
                Step::Request => {
                    let comma = if members.is_empty() { "" } else { "," };
                    let params = [r#"{"_meta":{"progressToken":"#, &id.to_string(), "}", comma, members, "}"].concat();
                    let request = post(&current, Some(id), method, &params, name);
                    (current, request, Some(id))
                }
                // It goes out although the run is aborted, for
                // CANCEL_NOTICE_WAIT at most: a hung server must not hold the abort.
                Step::Cancelled(old, of) => {
                    let params = [r#"{"requestId":"#, &of.to_string(), r#","reason":"the run was aborted"}"#].concat();
                    (old.clone(), post(old, None, "notifications/cancelled", &params, None), None)
                }
            };
            let notice = matches!(step, Step::Cancelled(..));
            request.timeout = if notice { Some(CANCEL_NOTICE_WAIT) } else { timeout };
            let quiet = CancelToken::new();
            let token = if notice { &quiet } else { cancel };
            let outcome = self.exchange(&session, request, id, on_progress, token).await;
            step = match (step, outcome) {
                (Step::Initialize, Ok((result, session_id))) => {
                    let version = result.as_ref().and_then(|r| r["protocolVersion"].as_str()).unwrap_or_default();
                    if !SUPPORTED_VERSIONS.contains(&version) {
                        let message = ["the server speaks protocol version ", version, ", not this client's"];
                        return Err(McpError::Malformed(message.concat()));
                    }
                    // The id goes back in a header: visible ASCII only (the spec's rule).
                    if !session_id.as_ref().is_none_or(|s| s.bytes().all(|b| b.is_ascii_graphic())) {
                        return Err(McpError::Malformed("a session id a header cannot carry".into()));
                    }
                    Step::Initialized(Session { version: Some(version.to_owned()), id: session_id })
                }
                (Step::Initialized(new), Ok(_)) => {
                    *self.session.borrow_mut() = new;
                    connecting.take();
                    Step::Request
                }
                (Step::Request, Ok((Some(result), _))) => return Ok(result),
                (Step::Request, Ok((None, _))) => {
                    return Err(McpError::Malformed("the server ended its answer without a result".into()))
                }
                (Step::Request, Err(McpError::Aborted)) => Step::Cancelled(session, id.unwrap_or_default()),
                (Step::Cancelled(..), _) => return Err(McpError::Aborted),
                (_, Err(McpError::SessionExpired)) if !reopened => {
                    reopened = true;
                    // An `initialized` refused so: this call opens the session anew.
                    connecting.take();
                    // A parallel call may have opened a new session already.
                    let mut current = self.session.borrow_mut();
                    if *current == session {
                        *current = Session::default();
                    }
                    Step::Request
                }
                (_, Err(e)) => return Err(e),
            };
        }
    }

    /// Sends `request` and reads its answer to the end, or to the response
    /// to request `id` (its result; `None` when there is none: a
    /// notification's 202, a stream that ended). Returns the answer's
    /// session id too. One loop reads both kinds of answer: an event stream
    /// message by message, any other body whole.
    async fn exchange(
        &self,
        session: &Session,
        request: HttpRequest,
        id: Option<u64>,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &CancelToken,
    ) -> Result<(Option<Value>, Option<String>)> {
        let mut answer = self.transport.send(request, cancel).await?;
        let ok = (200..300).contains(&answer.status);
        let stream = ok && answer.content_type.starts_with("text/event-stream");
        let mut decoder = SseDecoder::new();
        let mut body = Vec::new();
        loop {
            let chunk = answer.body.chunk().await?;
            if !stream {
                body.extend_from_slice(chunk.as_deref().unwrap_or_default());
                if body.len() > MAX_EVENT_BYTES {
                    return Err(McpError::Malformed("an answer too long to read".into()));
                }
            }
            let events = match (&chunk, stream) {
                (_, false) => Vec::new(),
                (Some(bytes), true) => decoder.feed(bytes).map_err(|e| McpError::Malformed(e.to_string()))?,
                (None, true) => match decoder.finish() {
                    Some(last) => vec![last],
                    None => Vec::new(),
                },
            };
            for event in &events {
                // Empty events prime a resumable stream; other kinds are not JSON-RPC.
                if event.event != "message" || event.data.trim().is_empty() {
                    continue;
                }
                match self.heard(&event.data, id, on_progress)? {
                    Heard::Answer(result) => return Ok((Some(result), answer.session_id)),
                    Heard::Reply(reply) => {
                        let reply = post(session, None, "", &reply, None);
                        let _ = self.transport.send(reply, cancel).await;
                    }
                    Heard::Nothing => {}
                }
            }
            if chunk.is_none() {
                break;
            }
        }
        // From text, as everywhere in the package: `from_slice` would
        // compile a second copy of serde_json's parser.
        let body = String::from_utf8_lossy(&body);
        if !ok {
            return Err(McpError::from_http(answer.status, &body, session.id.is_some()));
        }
        let result = match (stream, id) {
            (false, Some(_)) => match self.heard(&body, id, on_progress)? {
                Heard::Answer(result) => Some(result),
                _ => None,
            },
            _ => None,
        };
        Ok((result, answer.session_id))
    }

    /// One message from the server: the response to request `id`, a
    /// notification heard, or a request of the server to answer.
    fn heard(&self, text: &str, id: Option<u64>, on_progress: &mut dyn FnMut(Progress)) -> Result<Heard> {
        let message: Value = serde_json::from_str(text).map_err(|e| McpError::Malformed(e.to_string()))?;
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
            // A request of the server: `ping` is answered, the rest refused
            // (this client declared no capabilities).
            (Some(method), request) if !request.is_null() => {
                let answer = match method {
                    "ping" => r#""result":{}}"#,
                    _ => r#""error":{"code":-32601,"message":"not supported by this client"}}"#,
                };
                return Ok(Heard::Reply([r#"{"jsonrpc":"2.0","id":"#, &request.to_string(), ",", answer].concat()));
            }
            (None, answered) if id.is_some_and(|id| *answered == id) => {
                let error = &message["error"];
                if error.is_object() {
                    let text = error["message"].as_str().unwrap_or_default().to_owned();
                    return Err(McpError::Rpc { code: error["code"].as_i64().unwrap_or(0), message: text });
                }
                return Ok(Heard::Answer(message["result"].clone()));
            }
            // Other notifications (logging, resources) and stale answers.
            _ => {}
        }
        Ok(Heard::Nothing)
    }
}

/// What a message from the server asks of the client.
enum Heard {
    Nothing,
    /// The response to the request: its result.
    Answer(Value),
    /// A response to post back to the server.
    Reply(String),
}

/// A POST of one JSON-RPC message: a request when it has an `id`, a
/// notification when it has a `method` only, a response to the server when
/// `method` is empty (then `params` is the whole message).
fn post(session: &Session, id: Option<u64>, method: &str, params: &str, name: Option<&str>) -> HttpRequest {
    let mut headers = headers(session, "application/json, text/event-stream");
    headers.push(("content-type", "application/json".into()));
    let body = if method.is_empty() {
        params.to_owned()
    } else {
        // The 2026 revision routes on these headers; older servers ignore them.
        headers.push(("mcp-method", method.into()));
        let id = id.map(|id| [r#""id":"#, &id.to_string(), ","].concat()).unwrap_or_default();
        [r#"{"jsonrpc":"2.0","#, &id, r#""method":""#, method, r#"","params":"#, params, "}"].concat()
    };
    // A header value must be visible ASCII.
    if let Some(name) = name.filter(|n| n.bytes().all(|b| b.is_ascii_graphic())) {
        headers.push(("mcp-name", name.into()));
    }
    HttpRequest { method: HttpMethod::Post, headers, body: Some(body), timeout: None }
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
