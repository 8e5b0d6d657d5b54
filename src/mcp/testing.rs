//! The scripted transport of the native tests: a queue of answers, and
//! every request the client sent.
#![cfg(test)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::*;
use crate::cancel::CancelToken;

/// One scripted answer. `$id` in a body becomes the JSON-RPC id of the
/// request it answers.
#[derive(Clone)]
pub(super) struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub session: Option<&'static str>,
    pub body: String,
    /// After the body, the answer neither ends nor fails until cancelled.
    pub hang: bool,
}

pub(super) fn json_reply(body: &str) -> Reply {
    Reply { status: 200, content_type: "application/json", session: None, body: body.into(), hang: false }
}

pub(super) fn status(status: u16, body: &str) -> Reply {
    Reply { status, ..json_reply(body) }
}

pub(super) fn accepted() -> Reply {
    status(202, "")
}

/// An event stream of `events` (each a data line, or raw SSE text when it
/// starts with a field name or a comment).
pub(super) fn sse(events: &[&str]) -> Reply {
    let body: String = events
        .iter()
        .map(|e| if e.starts_with('{') { format!("event: message\ndata: {e}\n\n") } else { format!("{e}\n\n") })
        .collect();
    Reply { content_type: "text/event-stream", ..json_reply(&body) }
}

pub(super) fn result(result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":$id,"result":{result}}}"#)
}

/// `initialize` answered (with `session` and `version`), then `initialized` accepted.
pub(super) fn init(session: Option<&'static str>, version: &str) -> [Reply; 2] {
    let answer = result(&format!(
        r#"{{"protocolVersion":"{version}","capabilities":{{"tools":{{"listChanged":true}}}},"serverInfo":{{"name":"s","version":"1"}}}}"#
    ));
    [Reply { session, ..json_reply(&answer) }, accepted()]
}

pub(super) fn tools_page(names: &[&str], next: Option<&str>) -> Reply {
    let tools: Vec<Value> = names.iter().map(|n| json!({ "name": n, "inputSchema": { "type": "object" } })).collect();
    let mut page = json!({ "tools": tools });
    if let Some(next) = next {
        page["nextCursor"] = json!(next);
    }
    json_reply(&result(&page.to_string()))
}

#[derive(Default)]
pub(super) struct Script {
    pub replies: RefCell<VecDeque<Reply>>,
    /// Every request: method, headers, body.
    pub seen: RefCell<Vec<HttpRequest>>,
}

pub(super) struct Scripted(pub Rc<Script>);

pub(super) struct ScriptedBody {
    chunks: VecDeque<Vec<u8>>,
    hang: bool,
    /// The request had a timeout: a hanging answer fails at once.
    timeout: bool,
    cancel: CancelToken,
}

#[async_trait(?Send)]
impl AnswerBody for ScriptedBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Ok(Some(chunk));
        }
        if self.hang && self.timeout {
            return Err(McpError::Network("timed out".into()));
        }
        if self.hang {
            self.cancel.cancelled().await;
            return Err(McpError::Aborted);
        }
        Ok(None)
    }
}

#[async_trait(?Send)]
impl McpTransport for Scripted {
    async fn send(&self, request: HttpRequest, cancel: &CancelToken) -> Result<HttpAnswer> {
        if cancel.is_cancelled() {
            return Err(McpError::Aborted);
        }
        let id = request.body.as_deref().and_then(|b| serde_json::from_str::<Value>(b).ok()).map(|b| b["id"].clone());
        let timeout = request.timeout.is_some();
        self.0.seen.borrow_mut().push(request);
        // Let parallel callers interleave, as the network would.
        crate::platform::sleep(std::time::Duration::from_millis(1)).await;
        let Some(reply) = self.0.replies.borrow_mut().pop_front() else {
            return Err(McpError::Network("the script has no answer left".into()));
        };
        let body = reply.body.replace("$id", &id.unwrap_or_default().to_string());
        // Small chunks: events and JSON split anywhere must still be read.
        let chunks = body.as_bytes().chunks(7).map(<[u8]>::to_vec).collect();
        Ok(HttpAnswer {
            status: reply.status,
            content_type: reply.content_type.into(),
            session_id: reply.session.map(str::to_owned),
            body: Box::new(ScriptedBody { chunks, hang: reply.hang, timeout, cancel: cancel.clone() }),
        })
    }
}

pub(super) fn scripted(replies: impl IntoIterator<Item = Reply>) -> (McpClient, Rc<Script>) {
    let script = Rc::new(Script { replies: RefCell::new(replies.into_iter().collect()), ..Script::default() });
    (McpClient::new(Box::new(Scripted(script.clone()))), script)
}

/// What was sent, one line per request: the HTTP method, the JSON-RPC
/// method (`reply` for a response to the server), and the session id.
pub(super) fn sent(script: &Script) -> Vec<String> {
    script
        .seen
        .borrow()
        .iter()
        .map(|r| {
            let body: Value = r.body.as_deref().map(|b| serde_json::from_str(b).unwrap()).unwrap_or_default();
            let what = body["method"].as_str().unwrap_or(if body.is_null() { "-" } else { "reply" });
            let session = header(r, "mcp-session-id").unwrap_or("-");
            format!("{:?} {what} {session}", r.method)
        })
        .collect()
}

pub(super) fn header<'a>(request: &'a HttpRequest, name: &str) -> Option<&'a str> {
    request.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
}

pub(super) fn body(request: &HttpRequest) -> Value {
    serde_json::from_str(request.body.as_deref().unwrap_or("null")).unwrap()
}

/// A small MCP server in the process, for the agent's tests: it answers
/// `initialize`, `tools/list` (its `tools`) and `tools/call` (with
/// `answer`; a tool named `wait` answers only when cancelled, one named
/// `slow` on an event stream after two progress notifications), and records
/// the calls and cancellations it receives. `down`: the proxy cannot
/// reach it (its relay answers 502, its health says unreachable).
pub(crate) struct ToyServer {
    pub tools: Vec<Value>,
    pub answer: Box<dyn Fn(&str, &Value) -> Value>,
    /// Every `tools/call`: the tool and its arguments.
    pub calls: RefCell<Vec<(String, Value)>>,
    /// The ids of the requests `notifications/cancelled` named.
    pub cancelled: RefCell<Vec<Value>>,
    pub down: std::cell::Cell<bool>,
}

impl ToyServer {
    /// A server of `tools` whose calls `answer` answers (a `tools/call` result).
    pub fn new(tools: Value, answer: impl Fn(&str, &Value) -> Value + 'static) -> Rc<ToyServer> {
        Rc::new(ToyServer {
            tools: tools.as_array().cloned().unwrap_or_default(),
            answer: Box::new(answer),
            calls: RefCell::default(),
            cancelled: RefCell::default(),
            down: Default::default(),
        })
    }
}

struct ToyTransport(Rc<ToyServer>);

#[async_trait(?Send)]
impl McpTransport for ToyTransport {
    async fn send(&self, request: HttpRequest, cancel: &CancelToken) -> Result<HttpAnswer> {
        if cancel.is_cancelled() {
            return Err(McpError::Aborted);
        }
        crate::platform::sleep(std::time::Duration::from_millis(1)).await;
        let server = &self.0;
        let answer = |status: u16, body: String, hang: bool| HttpAnswer {
            status,
            content_type: "application/json".into(),
            session_id: Some("toy".into()),
            body: Box::new(ScriptedBody {
                chunks: [body.into_bytes()].into_iter().filter(|b| !b.is_empty()).collect(),
                hang,
                timeout: false,
                cancel: cancel.clone(),
            }),
        };
        if server.down.get() {
            let body = r#"{"error":{"type":"mcp_unreachable","message":"connection refused"}}"#;
            return Ok(answer(502, body.into(), false));
        }
        let message: Value = serde_json::from_str(request.body.as_deref().unwrap_or("null")).unwrap_or_default();
        let params = &message["params"];
        let result = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({ "protocolVersion": PROTOCOL_VERSION, "capabilities": { "tools": {} },
                                    "serverInfo": { "name": "toy", "version": "1" } }),
            "notifications/cancelled" => {
                server.cancelled.borrow_mut().push(params["requestId"].clone());
                return Ok(answer(202, String::new(), false));
            }
            method if method.starts_with("notifications/") => return Ok(answer(202, String::new(), false)),
            "tools/list" => json!({ "tools": server.tools }),
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or_default().to_owned();
                server.calls.borrow_mut().push((name.clone(), params["arguments"].clone()));
                if name == "wait" {
                    return Ok(answer(200, String::new(), true));
                }
                let result = (server.answer)(&name, &params["arguments"]);
                if name == "slow" {
                    // An event stream: two progress notifications, then the result.
                    let token = &params["_meta"]["progressToken"];
                    // The first message: the call's `say`, else "reading".
                    let say = params["arguments"]["say"].as_str().unwrap_or("reading");
                    let events = [
                        json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                                "params": { "progressToken": token, "progress": 1, "total": 2, "message": say } }),
                        json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                                "params": { "progressToken": token, "progress": 2, "total": 2 } }),
                        json!({ "jsonrpc": "2.0", "id": message["id"], "result": result }),
                    ];
                    let stream: String = events.iter().map(|e| format!("event: message\ndata: {e}\n\n")).collect();
                    return Ok(HttpAnswer { content_type: "text/event-stream".into(), ..answer(200, stream, false) });
                }
                result
            }
            _ => {
                let error =
                    json!({ "jsonrpc": "2.0", "id": message["id"], "error": { "code": -32601, "message": "no" } });
                return Ok(answer(200, error.to_string(), false));
            }
        };
        Ok(answer(200, json!({ "jsonrpc": "2.0", "id": message["id"], "result": result }).to_string(), false))
    }
}

/// A proxy relaying toy servers by name.
pub(crate) struct ToyRelay(pub Vec<(&'static str, Rc<ToyServer>)>);

#[async_trait(?Send)]
impl McpRelay for ToyRelay {
    async fn servers(&self, _cancel: &CancelToken) -> Result<Vec<RelayedServer>> {
        let listed = self.0.iter().map(|(name, server)| RelayedServer {
            name: (*name).into(),
            reachable: !server.down.get(),
            error: server.down.get().then(|| "unreachable".into()),
        });
        Ok(listed.collect())
    }

    fn transport(&self, server: &str) -> Box<dyn McpTransport> {
        let found = self.0.iter().find(|(name, _)| *name == server).map(|(_, s)| s.clone());
        Box::new(ToyTransport(found.unwrap_or_else(|| ToyServer::new(json!([]), |_, _| json!({})))))
    }
}
