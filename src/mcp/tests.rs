//! The client against a scripted transport: each case is the server's
//! answers, in order, what the client is asked, and what it must send and
//! return. Add rows, not functions. (The browser tests run the same client
//! against the reference server through the real relay: tests/web_mcp.rs.)

use std::cell::RefCell;
use std::rc::Rc;

use futures_executor::block_on;
use serde_json::{json, Value};

use super::testing::*;
use super::*;
use crate::cancel::CancelToken;

/// A call of `echo`: its text, or the error's code.
fn call_outcome(client: &McpClient) -> String {
    match block_on(client.call("echo", &json!({ "m": 1 }), &mut |_| {}, &CancelToken::new())) {
        Ok(r) if r.is_error => format!("tool error: {}", r.text),
        Ok(r) => r.text,
        Err(e) => format!("error {}", e.code()),
    }
}

const OK_TEXT: &str = r#"{"content":[{"type":"text","text":"done"}]}"#;

#[test]
fn calls_as_the_server_answers_them() {
    let s = Some("s-1");
    // (case, the server's answers, the outcome, what the client sent)
    let cases: Vec<(&str, Vec<Reply>, &str, &[&str])> = vec![
        (
            "a session, a JSON answer",
            [&init(s, PROTOCOL_VERSION)[..], &[json_reply(&result(OK_TEXT))]].concat(),
            "done",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "a stateless server: no session header",
            [&init(None, "2025-06-18")[..], &[json_reply(&result(OK_TEXT))]].concat(),
            "done",
            &["Post initialize -", "Post notifications/initialized -", "Post tools/call -"],
        ),
        (
            "an event stream: priming event, keepalive, notifications, then the answer",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[sse(&[
                    "id: 0\ndata: ",
                    ": keepalive",
                    r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
                    r#"{"jsonrpc":"2.0","id":99,"result":{"content":[{"type":"text","text":"someone else's"}]}}"#,
                    &result(OK_TEXT),
                    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":$id,"progress":9}}"#,
                ])],
            ]
            .concat(),
            "done",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "the server pings in the middle of a stream: answered",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[sse(&[r#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#, &result(OK_TEXT)]), accepted()],
            ]
            .concat(),
            "done",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1", "Post reply s-1"],
        ),
        (
            "the session expired (404): opened again, the call sent once more",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[status(404, r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}"#)],
                &init(Some("s-2"), PROTOCOL_VERSION)[..],
                &[json_reply(&result(OK_TEXT))],
            ]
            .concat(),
            "done",
            &[
                "Post initialize -",
                "Post notifications/initialized s-1",
                "Post tools/call s-1",
                "Post initialize -",
                "Post notifications/initialized s-2",
                "Post tools/call s-2",
            ],
        ),
        (
            "server-everything's 400 for a forgotten session counts as expiry",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[status(400, r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#)],
                &init(Some("s-2"), PROTOCOL_VERSION)[..],
                &[json_reply(&result(OK_TEXT))],
            ]
            .concat(),
            "done",
            &[
                "Post initialize -",
                "Post notifications/initialized s-1",
                "Post tools/call s-1",
                "Post initialize -",
                "Post notifications/initialized s-2",
                "Post tools/call s-2",
            ],
        ),
        (
            "expired twice in a row: an error, not a loop",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[status(404, "{}")],
                &init(Some("s-2"), PROTOCOL_VERSION)[..],
                &[status(404, "{}")],
            ]
            .concat(),
            "error mcp_session_expired",
            &[
                "Post initialize -",
                "Post notifications/initialized s-1",
                "Post tools/call s-1",
                "Post initialize -",
                "Post notifications/initialized s-2",
                "Post tools/call s-2",
            ],
        ),
        (
            "a 404 without a session is the server's answer, not expiry",
            [&init(None, PROTOCOL_VERSION)[..], &[status(404, "Cannot POST /mcp")]].concat(),
            "error mcp_http",
            &["Post initialize -", "Post notifications/initialized -", "Post tools/call -"],
        ),
        (
            "the proxy's own 404 (no such server) is never taken for expiry",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[status(404, r#"{"error":{"type":"mcp_server_not_found","message":"no MCP server named x"}}"#)],
            ]
            .concat(),
            "error mcp_server_not_found",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "the server is down: the relay's 502",
            vec![status(502, r#"{"error":{"type":"mcp_unreachable","message":"connection refused"}}"#)],
            "error mcp_unreachable",
            &["Post initialize -"],
        ),
        (
            "a JSON-RPC error",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[json_reply(r#"{"jsonrpc":"2.0","id":$id,"error":{"code":-32602,"message":"Unknown tool: echo"}}"#)],
            ]
            .concat(),
            "error mcp_rpc",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "isError: a tool error with its text",
            [
                &init(s, PROTOCOL_VERSION)[..],
                &[json_reply(&result(r#"{"content":[{"type":"text","text":"no such file"}],"isError":true}"#))],
            ]
            .concat(),
            "tool error: no such file",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "a stream that ends without the answer",
            [&init(s, PROTOCOL_VERSION)[..], &[sse(&[r#"{"jsonrpc":"2.0","method":"notifications/message"}"#])]]
                .concat(),
            "error malformed_response",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "an answer that is not JSON",
            [&init(s, PROTOCOL_VERSION)[..], &[json_reply("<html>oops</html>")]].concat(),
            "error malformed_response",
            &["Post initialize -", "Post notifications/initialized s-1", "Post tools/call s-1"],
        ),
        (
            "a version the client does not speak: nothing else is sent",
            vec![init(s, "2024-11-05")[0].clone()],
            "error malformed_response",
            &["Post initialize -"],
        ),
        (
            "a session id a header cannot carry",
            vec![init(Some("bad\nid"), PROTOCOL_VERSION)[0].clone()],
            "error malformed_response",
            &["Post initialize -"],
        ),
        (
            "the session forgotten at once (initialized answered 404): opened anew",
            [
                &[init(s, PROTOCOL_VERSION)[0].clone(), status(404, "{}")],
                &init(Some("s-2"), PROTOCOL_VERSION)[..],
                &[json_reply(&result(OK_TEXT))],
            ]
            .concat(),
            "done",
            &[
                "Post initialize -",
                "Post notifications/initialized s-1",
                "Post initialize -",
                "Post notifications/initialized s-2",
                "Post tools/call s-2",
            ],
        ),
        (
            "initialized refused",
            vec![init(s, PROTOCOL_VERSION)[0].clone(), status(500, "broken")],
            "error mcp_http",
            &["Post initialize -", "Post notifications/initialized s-1"],
        ),
        (
            "an error answer of the initialize itself",
            vec![json_reply(r#"{"jsonrpc":"2.0","id":$id,"error":{"code":-32600,"message":"no"}}"#)],
            "error mcp_rpc",
            &["Post initialize -"],
        ),
    ];
    for (case, replies, outcome, requests) in cases {
        let (client, script) = scripted(replies);
        assert_eq!(call_outcome(&client), outcome, "{case}");
        assert_eq!(sent(&script), requests, "{case}");
        assert!(script.replies.borrow().is_empty(), "{case}: answers left unread");
    }
}

#[test]
fn requests_carry_the_protocol_headers() {
    let (client, script) = scripted([&init(Some("s-1"), "2025-06-18")[..], &[json_reply(&result(OK_TEXT))]].concat());
    call_outcome(&client);
    let seen = script.seen.borrow();
    let init_body = body(&seen[0]);
    assert_eq!(init_body["params"]["protocolVersion"], PROTOCOL_VERSION);
    assert_eq!(init_body["params"]["capabilities"], json!({}), "no capabilities: no sampling, elicitation or roots");
    assert_eq!(header(&seen[0], "mcp-protocol-version"), None);
    assert_eq!(header(&seen[0], "accept"), Some("application/json, text/event-stream"));
    assert_eq!(header(&seen[0], "content-type"), Some("application/json"));
    assert_eq!(body(&seen[1]), json!({ "jsonrpc": "2.0", "method": "notifications/initialized", "params": {} }));
    let call = &seen[2];
    assert_eq!(header(call, "mcp-protocol-version"), Some("2025-06-18"), "the negotiated version");
    assert_eq!(header(call, "mcp-method"), Some("tools/call"));
    assert_eq!(header(call, "mcp-name"), Some("echo"));
    let call = body(call);
    assert_eq!(call["params"]["name"], "echo");
    assert_eq!(call["params"]["arguments"], json!({ "m": 1 }));
    assert_eq!(call["params"]["_meta"]["progressToken"], call["id"]);
    assert_ne!(call["id"], init_body["id"]);
    assert_eq!(client.protocol_version().as_deref(), Some("2025-06-18"));
}

#[test]
fn tools_are_listed_page_by_page_and_sorted() {
    let pages = [
        tools_page(&["b", "a"], Some("c1")),
        tools_page(&["d"], Some("c2")),
        // The server repeats a cursor: reading stops, nothing loops.
        tools_page(&["c", "a"], Some("c1")),
    ];
    let (client, script) = scripted([&init(Some("s"), PROTOCOL_VERSION)[..], &pages[..]].concat());
    let tools = block_on(client.tools(&CancelToken::new())).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"], "sorted, a repeated name kept once");
    let cursors: Vec<Value> = script.seen.borrow()[2..].iter().map(|r| body(r)["params"]["cursor"].clone()).collect();
    assert_eq!(cursors, [Value::Null, json!("c1"), json!("c2")]);

    // A server whose cursor never ends is read MAX_TOOL_PAGES times.
    let endless: Vec<Reply> =
        (0..MAX_TOOL_PAGES + 5).map(|i| tools_page(&[&format!("t{i}")], Some(&format!("c{i}")))).collect();
    let (client, script) = scripted([&init(None, PROTOCOL_VERSION)[..], &endless[..]].concat());
    assert_eq!(block_on(client.tools(&CancelToken::new())).unwrap().len(), MAX_TOOL_PAGES);
    assert_eq!(script.replies.borrow().len(), 5);
}

#[test]
fn tool_definitions_take_the_spec_defaults() {
    let page = json!({ "tools": [
        { "name": "plain", "inputSchema": { "type": "object", "properties": { "q": { "type": "string" } } } },
        { "name": "reader", "description": "reads", "inputSchema": { "type": "object" },
          "annotations": { "readOnlyHint": true, "openWorldHint": false } },
        { "name": "careful", "annotations": { "destructiveHint": false, "readOnlyHint": "yes" } },
        { "description": "no name" },
        "not an object",
        { "name": "" },
    ] });
    let (client, _) = scripted([&init(None, PROTOCOL_VERSION)[..], &[json_reply(&result(&page.to_string()))]].concat());
    let tools = block_on(client.tools(&CancelToken::new())).unwrap();
    let summary: Vec<(&str, bool, bool, bool)> =
        tools.iter().map(|t| (t.name.as_str(), t.read_only, t.destructive, t.open_world)).collect();
    assert_eq!(summary, [("careful", false, false, true), ("plain", false, true, true), ("reader", true, true, false)]);
    assert_eq!(tools[0].input_schema, json!({ "type": "object" }), "a missing schema becomes any object");
    assert_eq!(tools[1].input_schema["properties"]["q"]["type"], "string");
    assert_eq!(tools[2].description, "reads");
}

#[test]
fn results_keep_text_and_structured_content_and_describe_the_rest() {
    let cases: &[(Value, &str)] = &[
        (json!({ "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }] }), "a\nb"),
        (
            json!({ "content": [{ "type": "text", "text": "{\"t\": 20}" }], "structuredContent": { "t": 20 } }),
            "{\"t\": 20}",
        ),
        (
            json!({ "content": [{ "type": "text", "text": "It is warm." }], "structuredContent": { "t": 20 } }),
            "It is warm.\n{\"t\":20}",
        ),
        (json!({ "content": [], "structuredContent": { "t": 20 } }), "{\"t\":20}"),
        (
            json!({ "content": [{ "type": "image", "data": "AAAAAAAA", "mimeType": "image/png" }] }),
            "[image image/png 6 bytes, not shown]",
        ),
        (json!({ "content": [{ "type": "audio", "data": "AAAA" }] }), "[audio 3 bytes, not shown]"),
        (
            json!({ "content": [{ "type": "resource_link", "uri": "demo://r/1", "name": "First" }] }),
            "[resource_link First demo://r/1]",
        ),
        (
            json!({ "content": [{ "type": "resource", "resource": { "uri": "demo://r/2", "text": "inside" } }] }),
            "[resource demo://r/2]\ninside",
        ),
        (
            json!({ "content": [{ "type": "resource", "resource": { "uri": "demo://r/3", "blob": "AA==", "mimeType": "application/gzip" } }] }),
            "[resource demo://r/3 application/gzip 3 bytes, not shown]",
        ),
        (json!({ "content": [{ "type": "hologram" }] }), "[hologram]"),
        (json!({ "content": "not a list" }), ""),
        (json!(null), ""),
    ];
    for (result, text) in cases {
        let read = CallResult::from_value(result);
        assert_eq!(read.text, *text, "{result}");
        assert!(!read.is_error);
    }
    let read = CallResult::from_value(&json!({ "content": [], "structuredContent": { "t": 1 }, "isError": true }));
    assert_eq!((read.structured, read.is_error), (Some(json!({ "t": 1 })), true));
}

#[test]
fn progress_and_list_changed_are_heard_on_the_stream() {
    let events = [
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":$id,"progress":1,"total":3}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progress":2}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":$id,"progress":2,"total":3,"message":"half"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        &result(OK_TEXT),
    ];
    let (client, _) = scripted([&init(Some("s"), PROTOCOL_VERSION)[..], &[sse(&events)]].concat());
    let mut heard = Vec::new();
    let outcome = block_on(client.call("echo", &json!({}), &mut |p| heard.push(p), &CancelToken::new())).unwrap();
    assert_eq!(outcome.text, "done");
    assert_eq!(
        heard,
        [
            Progress { progress: 1.0, total: Some(3.0), message: None },
            Progress { progress: 2.0, total: Some(3.0), message: Some("half".into()) },
        ],
        "only this call's progress"
    );
    assert!(client.take_tools_changed());
    assert!(!client.take_tools_changed(), "taken once");
}

#[test]
fn an_aborted_call_is_cancelled_at_the_server() {
    let hanging = Reply { hang: true, ..sse(&[r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#]) };
    // The notice is accepted, or the server hangs on it too: either way the
    // abort ends the call (the transport's timeout ends a hung notice).
    for notice_answer in [accepted(), Reply { hang: true, ..accepted() }] {
        let (client, script) =
            scripted([&init(Some("s"), PROTOCOL_VERSION)[..], &[hanging.clone(), notice_answer]].concat());
        let cancel = CancelToken::new();
        let aborted = async {
            crate::platform::sleep(std::time::Duration::from_millis(20)).await;
            cancel.cancel();
        };
        let (args, mut quiet) = (json!({}), |_| {});
        let (outcome, ()) =
            block_on(futures_util::future::join(client.call("slow", &args, &mut quiet, &cancel), aborted));
        assert_eq!(outcome.unwrap_err(), McpError::Aborted);
        let seen = script.seen.borrow();
        let call = body(&seen[2]);
        let notice = body(&seen[3]);
        assert_eq!(notice["method"], "notifications/cancelled");
        assert_eq!(notice["params"]["requestId"], call["id"]);
        assert_eq!(header(&seen[3], "mcp-session-id"), Some("s"));
        assert!(seen[3].timeout.is_some() && seen[2].timeout.is_none(), "only the notice has a time limit");
        assert_eq!(seen.len(), 4);
    }
}

#[test]
fn an_abort_during_initialize_sends_no_cancellation() {
    let hanging = Reply { hang: true, ..json_reply("") };
    let (client, script) = scripted([hanging]);
    let cancel = CancelToken::new();
    let (args, mut quiet) = (json!({}), |_| {});
    let run = client.call("echo", &args, &mut quiet, &cancel);
    let (outcome, ()) = block_on(futures_util::future::join(run, async {
        crate::platform::sleep(std::time::Duration::from_millis(10)).await;
        cancel.cancel();
    }));
    assert_eq!(outcome.unwrap_err(), McpError::Aborted);
    assert_eq!(sent(&script), ["Post initialize -"]);
    // A run aborted before the call: nothing is sent at all.
    let (client, script) = scripted([]);
    let aborted = CancelToken::new();
    aborted.cancel();
    assert_eq!(block_on(client.call("echo", &json!({}), &mut |_| {}, &aborted)).unwrap_err(), McpError::Aborted);
    assert!(script.seen.borrow().is_empty());
}

#[test]
fn parallel_calls_share_one_initialize() {
    let replies =
        [&init(Some("s"), PROTOCOL_VERSION)[..], &[json_reply(&result(OK_TEXT)), json_reply(&result(OK_TEXT))]];
    let (client, script) = scripted(replies.concat());
    let cancel = CancelToken::new();
    let (args, mut quiet_a, mut quiet_b) = (json!({}), |_| {}, |_| {});
    let one = client.call("a", &args, &mut quiet_a, &cancel);
    let (a, b) = block_on(futures_util::future::join(one, client.call("b", &args, &mut quiet_b, &cancel)));
    assert_eq!((a.unwrap().text, b.unwrap().text), ("done".into(), "done".into()));
    assert_eq!(
        sent(&script),
        ["Post initialize -", "Post notifications/initialized s", "Post tools/call s", "Post tools/call s"]
    );
}

#[test]
fn the_session_is_closed_and_the_notification_stream_read() {
    let stream = Reply {
        session: None,
        ..sse(&[
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        ])
    };
    let (client, script) = scripted([&init(Some("s"), PROTOCOL_VERSION)[..], &[stream, status(405, "")]].concat());
    let cancel = CancelToken::new();
    assert_eq!(block_on(client.listen(&cancel)), Ok(true));
    assert!(client.take_tools_changed());
    assert_eq!(block_on(client.listen(&cancel)), Ok(false), "405: the server offers no stream");
    {
        let seen = script.seen.borrow();
        let get = &seen[2];
        assert_eq!(
            (get.method, header(get, "accept"), get.body.clone()),
            (HttpMethod::Get, Some("text/event-stream"), None)
        );
        assert_eq!(seen.len(), 4);
    }

    script.replies.borrow_mut().push_back(status(200, ""));
    block_on(client.close(&cancel));
    let last = script.seen.borrow().last().cloned().unwrap();
    assert_eq!((last.method, header(&last, "mcp-session-id")), (HttpMethod::Delete, Some("s")));
    assert_eq!(client.protocol_version(), None, "closed: the next call opens a new session");
}

#[test]
fn errors_say_whether_the_server_is_gone() {
    let cases: &[(u16, &str, bool, &str, bool)] = &[
        (502, r#"{"error":{"type":"mcp_unreachable","message":"refused"}}"#, true, "mcp_unreachable", true),
        (504, r#"{"error":{"type":"mcp_timeout","message":"slow"}}"#, true, "mcp_timeout", true),
        (404, r#"{"error":{"type":"mcp_server_not_found","message":"x"}}"#, true, "mcp_server_not_found", true),
        (429, r#"{"error":{"type":"rate_limited","message":"slow down"}}"#, true, "rate_limited", false),
        (401, r#"{"error":{"type":"unauthorized","message":"token"}}"#, false, "auth", false),
        (403, r#"{"error":{"type":"origin_not_allowed","message":"o"}}"#, false, "bad_request", false),
        (502, r#"{"error":{"type":"mcp_auth","message":"t"}}"#, false, "mcp_auth", true),
        (
            404,
            r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"}}"#,
            true,
            "mcp_session_expired",
            false,
        ),
        (404, "gone", false, "mcp_http", false),
        (500, "boom", true, "mcp_http", false),
    ];
    for (status, body, had_session, code, gone) in cases {
        let error = McpError::from_http(*status, body, *had_session);
        assert_eq!((error.code().as_str(), error.server_gone()), (*code, *gone), "{status} {body}");
    }
}

#[test]
fn health_lists_the_relayed_servers() {
    let health = json!({ "mcp": [
        { "name": "notes", "reachable": true },
        { "name": "dict", "reachable": false, "error": "timeout" },
        { "reachable": true },
    ] });
    let servers = relayed_servers(&health);
    assert_eq!(
        servers,
        [
            RelayedServer { name: "notes".into(), reachable: true, error: None },
            RelayedServer { name: "dict".into(), reachable: false, error: Some("timeout".into()) },
        ]
    );
    assert!(relayed_servers(&json!({ "chat": {} })).is_empty(), "an older proxy");
}

/// A relay of scripted servers: `health` is what `/api/health` says.
struct ScriptedRelay {
    health: RefCell<Result<Vec<RelayedServer>>>,
    scripts: Vec<(&'static str, Rc<Script>)>,
}

#[async_trait::async_trait(?Send)]
impl McpRelay for Rc<ScriptedRelay> {
    async fn servers(&self, _cancel: &CancelToken) -> Result<Vec<RelayedServer>> {
        self.health.borrow().clone()
    }

    fn transport(&self, server: &str) -> Box<dyn McpTransport> {
        let script = self.scripts.iter().find(|(name, _)| *name == server).map(|(_, s)| s.clone());
        Box::new(Scripted(script.unwrap_or_default()))
    }
}

fn up(name: &str) -> RelayedServer {
    RelayedServer { name: name.into(), reachable: true, error: None }
}

fn statuses(servers: &[McpServer]) -> Vec<(String, &'static str, usize)> {
    servers.iter().map(|s| (s.name.clone(), s.status.as_str(), s.tools.len())).collect()
}

fn queue(script: &Script, replies: impl IntoIterator<Item = Reply>) {
    script.replies.borrow_mut().extend(replies);
}

#[test]
fn servers_are_checked_and_kept_briefly() {
    let (notes, dict, files) = (Rc::new(Script::default()), Rc::new(Script::default()), Rc::new(Script::default()));
    let down = RelayedServer { name: "files".into(), reachable: false, error: Some("timeout".into()) };
    let relay = Rc::new(ScriptedRelay {
        health: RefCell::new(Ok(vec![up("notes"), up("dict"), down])),
        scripts: vec![("notes", notes.clone()), ("dict", dict.clone()), ("files", files.clone())],
    });
    queue(&notes, [&init(Some("n"), PROTOCOL_VERSION)[..], &[tools_page(&["search", "add"], None)]].concat());
    queue(&dict, [init(None, PROTOCOL_VERSION)[0].clone(), status(500, "broken")]);
    let servers = McpServers::new(Box::new(relay.clone()));
    let cancel = CancelToken::new();
    let on = |_: &str| false;
    let first = block_on(servers.check(&on, &cancel));
    assert_eq!(
        statuses(&first),
        [("notes".into(), "ready", 2), ("dict".into(), "error", 0), ("files".into(), "unreachable", 0)]
    );
    assert_eq!(first[2].problem.as_deref(), Some("timeout"));
    assert!(first[1].problem.as_deref().unwrap().contains("broken"), "{:?}", first[1].problem);
    assert!(files.seen.borrow().is_empty(), "the proxy said it cannot reach it: not asked");

    // Within the time a check holds: nothing is asked.
    let again = block_on(servers.check(&on, &cancel));
    assert!(Rc::ptr_eq(&first, &again));
    assert_eq!(notes.seen.borrow().len(), 3);

    // Asked again: the same session lists again; the server turned off is not contacted.
    servers.stale();
    queue(&notes, [tools_page(&["search"], None)]);
    let off = |name: &str| name == "dict";
    let third = block_on(servers.check(&off, &cancel));
    assert_eq!(statuses(&third)[..2], [("notes".into(), "ready", 1), ("dict".into(), "off", 0)]);
    assert_eq!(sent(&notes)[3], "Post tools/list n", "no new initialize");
    assert_eq!(dict.seen.borrow().len(), 2);

    // The server says its tools changed: checked again at once; it has gone
    // away by then (the relay's 502), so its tools are no longer offered.
    *relay.health.borrow_mut() = Ok(vec![up("notes")]);
    queue(
        &notes,
        [
            sse(&[r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#, &result(r#"{"content":[]}"#)]),
            status(502, r#"{"error":{"type":"mcp_unreachable","message":"connection refused"}}"#),
        ],
    );
    block_on(third[0].client.call("search", &json!({}), &mut |_| {}, &cancel)).unwrap();
    let fourth = block_on(servers.check(&on, &cancel));
    assert_eq!(statuses(&fourth), [("notes".into(), "unreachable", 1)], "the tool it had, withdrawn");

    // No proxy to ask: no servers; an aborted check keeps what it knew.
    servers.stale();
    *relay.health.borrow_mut() = Err(McpError::Network("offline".into()));
    assert!(block_on(servers.check(&on, &cancel)).is_empty());
    servers.stale();
    *relay.health.borrow_mut() = Err(McpError::Aborted);
    assert!(block_on(servers.check(&on, &cancel)).is_empty(), "kept: the last check found none");
}

#[test]
fn a_silent_server_is_given_up_on() {
    // The list request hangs; its timeout (the transport's) ends it.
    let silent = Rc::new(Script::default());
    queue(&silent, [Reply { hang: true, ..json_reply("") }]);
    let relay = Rc::new(ScriptedRelay {
        health: RefCell::new(Ok(vec![up("quiet")])),
        scripts: vec![("quiet", silent.clone())],
    });
    let servers = McpServers::new(Box::new(relay));
    let checked = block_on(servers.check(&|_| false, &CancelToken::new()));
    assert_eq!(statuses(&checked), [("quiet".into(), "unreachable", 0)]);
    assert_eq!(silent.seen.borrow()[0].timeout, Some(LIST_TIMEOUT));
}
