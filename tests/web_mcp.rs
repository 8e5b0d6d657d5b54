//! Browser tests of the MCP client in Chromium: `McpClient` over
//! `RelayTransport`, through the real atelier-proxy's relay, to the real
//! reference server (`@modelcontextprotocol/server-everything`) and the
//! recorder (tests/mcp/recorder.mjs), all started by `cargo xtask test`.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use atelier_agent::cancel::CancelToken;
use atelier_agent::mcp::{
    fetch_relayed_servers, McpClient, McpError, McpServers, Progress, ProxyRelay, RelayTransport, LIST_TIMEOUT,
    PROTOCOL_VERSION,
};
use serde_json::{json, Value};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::{post_text, PROXY};

const RECORDER: Option<&str> = option_env!("ATELIER_TEST_RECORDER");
const RECORDER_TOKEN: Option<&str> = option_env!("ATELIER_TEST_RECORDER_TOKEN");
/// The page's client token: the proxy of these tests requires none, and it
/// must never reach an MCP server.
const PAGE_TOKEN: &str = "page-client-token-2718";

fn proxy() -> &'static str {
    PROXY.expect("run through `cargo xtask test`, which starts the proxy (ATELIER_TEST_PROXY)")
}

fn client(server: &str) -> McpClient {
    McpClient::new(Box::new(RelayTransport::new(proxy(), server, Some(PAGE_TOKEN.into()))))
}

/// POSTs to the recorder's control endpoint `path` (`/__reset`, `/__down`, …).
async fn recorder(path: &str, body: &str) -> String {
    let recorder = RECORDER.expect("run through `cargo xtask test`, which starts the recorder (ATELIER_TEST_RECORDER)");
    post_text(&format!("{recorder}{path}"), body).await
}

/// What the recorder received: `[{method, path, headers, body}]`.
async fn seen() -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(&recorder("/__seen", "").await).unwrap()
}

/// The JSON-RPC methods the recorder received, in order (`GET`/`DELETE` for those).
async fn seen_methods() -> Vec<String> {
    let requests = seen().await;
    let method = |r: &Value| {
        r["body"]["method"].as_str().map_or_else(|| r["method"].as_str().unwrap().to_owned(), str::to_owned)
    };
    requests.iter().map(method).collect()
}

async fn call_text(client: &McpClient, tool: &str, args: Value) -> Result<(String, bool), McpError> {
    client.call(tool, &args, &mut |_| {}, &CancelToken::new()).await.map(|r| (r.text, r.is_error))
}

#[wasm_bindgen_test]
async fn the_reference_server_through_the_relay() {
    let everything = client("everything");
    let cancel = CancelToken::new();
    everything.connect(&cancel).await.unwrap();
    assert_eq!(everything.protocol_version().as_deref(), Some(PROTOCOL_VERSION));

    let tools = everything.tools(&cancel).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted: {names:?}");
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert!(echo.read_only, "{echo:?}");
    assert_eq!(echo.input_schema["type"], "object");

    // Its answers are event streams (with a priming event of their own).
    let (text, is_error) = call_text(&everything, "echo", json!({ "message": "through the relay" })).await.unwrap();
    assert!(text.contains("through the relay") && !is_error, "{text}");
    assert!(call_text(&everything, "get-sum", json!({ "a": 2, "b": 3 })).await.unwrap().0.contains('5'));

    let progress = Rc::new(RefCell::new(Vec::new()));
    let heard = progress.clone();
    let long = everything
        .call(
            "trigger-long-running-operation",
            &json!({ "duration": 0.3, "steps": 3 }),
            &mut move |p: Progress| heard.borrow_mut().push(p.progress),
            &cancel,
        )
        .await
        .unwrap();
    assert!(long.text.contains("completed"), "{}", long.text);
    assert_eq!(*progress.borrow(), [1.0, 2.0, 3.0], "progress arrived before the result");

    let image = call_text(&everything, "get-tiny-image", json!({})).await.unwrap().0;
    assert!(image.contains("[image image/png "), "an image is described: {image}");
    let weather =
        everything.call("get-structured-content", &json!({ "location": "New York" }), &mut |_| {}, &cancel).await;
    let weather = weather.unwrap();
    assert!(weather.structured.as_ref().is_some_and(|s| s.get("temperature").is_some()), "{weather:?}");
    let resource = call_text(&everything, "get-resource-reference", json!({ "resourceType": "Text", "resourceId": 1 }));
    assert!(resource.await.unwrap().0.contains("[resource demo://"), "a resource is shown with its address");
    everything.close(&cancel).await;
}

#[wasm_bindgen_test]
async fn errors_of_the_server_are_errors_of_the_call() {
    recorder("/__reset", "").await;
    let recorded = client("recorder");
    let (text, is_error) = call_text(&recorded, "fail", json!({})).await.unwrap();
    assert!(is_error && text.contains("on purpose"), "isError: {text}");
    let everything = client("everything");
    let unknown = call_text(&everything, "no-such-tool", json!({})).await;
    assert!(matches!(&unknown, Err(McpError::Rpc { .. }) | Ok((_, true))), "{unknown:?}");
    let bad = call_text(&everything, "get-sum", json!({ "a": "two" })).await;
    assert!(matches!(&bad, Err(McpError::Rpc { .. }) | Ok((_, true))), "invalid arguments: {bad:?}");
    let missing = client("no-such-server").connect(&CancelToken::new()).await.unwrap_err();
    assert_eq!(missing.code(), "mcp_server_not_found", "{missing}");
}

#[wasm_bindgen_test]
async fn pages_are_read_and_only_the_server_token_reaches_the_server() {
    recorder("/__reset", "").await;
    recorder("/__pages", "2").await;
    let recorded = client("recorder");
    let tools = recorded.tools(&CancelToken::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "echo_headers", "erase_note", "fail", "wait"]);
    let erase = tools.iter().find(|t| t.name == "erase_note").unwrap();
    assert!(!erase.read_only && erase.destructive && erase.open_world, "no annotations: the spec's defaults");
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert!(add.read_only && !add.open_world);

    let (echoed, _) = call_text(&recorded, "echo_headers", json!({})).await.unwrap();
    assert!(echoed.contains("Bearer [redacted]"), "the relay cut the echoed token out: {echoed}");
    assert_eq!(call_text(&recorded, "add", json!({ "a": 40, "b": 2 })).await.unwrap().0, "42\n{\"sum\":42}");

    let requests = seen().await;
    let cursors: Vec<&Value> = requests
        .iter()
        .filter(|r| r["body"]["method"] == "tools/list")
        .map(|r| &r["body"]["params"]["cursor"])
        .collect();
    assert_eq!(cursors, [&Value::Null, &json!("2"), &json!("4")], "three pages of two");
    let token = format!("Bearer {}", RECORDER_TOKEN.unwrap());
    for request in &requests {
        let headers = &request["headers"];
        assert_eq!(headers["authorization"], token.as_str(), "{request}");
        assert!(!request.to_string().contains(PAGE_TOKEN), "the page's token reached the server: {request}");
        if request["body"]["method"] != "initialize" {
            assert_eq!(headers["mcp-protocol-version"], PROTOCOL_VERSION, "{request}");
            assert!(headers["mcp-session-id"].is_string(), "{request}");
        }
    }
}

#[wasm_bindgen_test]
async fn a_forgotten_session_is_opened_again() {
    recorder("/__reset", "").await;
    let recorded = client("recorder");
    assert_eq!(call_text(&recorded, "add", json!({ "a": 1, "b": 1 })).await.unwrap().0, "2\n{\"sum\":2}");
    recorder("/__forget", "").await;
    assert_eq!(call_text(&recorded, "add", json!({ "a": 2, "b": 2 })).await.unwrap().0, "4\n{\"sum\":4}");
    let methods = seen_methods().await;
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ],
        "the refused call (404) sent again in the new session"
    );
    // Ending the session: DELETE, and the next call opens a new one.
    recorded.close(&CancelToken::new()).await;
    call_text(&recorded, "add", json!({ "a": 0, "b": 0 })).await.unwrap();
    let methods = seen_methods().await;
    assert_eq!(methods[7..], ["DELETE", "initialize", "notifications/initialized", "tools/call"]);
}

#[wasm_bindgen_test]
async fn a_server_that_goes_away_is_an_error_never_a_crash() {
    recorder("/__reset", "").await;
    let recorded = client("recorder");
    call_text(&recorded, "add", json!({ "a": 1, "b": 2 })).await.unwrap();
    recorder("/__down", "").await;
    let gone = call_text(&recorded, "add", json!({ "a": 1, "b": 2 })).await.unwrap_err();
    assert_eq!(gone.code(), "mcp_unreachable", "{gone}");
    assert!(gone.server_gone());
    // The proxy's health learnt it from the failed call.
    let servers = fetch_relayed_servers(proxy(), &CancelToken::new()).await.unwrap();
    let state: Vec<(&str, bool)> = servers.iter().map(|s| (s.name.as_str(), s.reachable)).collect();
    assert_eq!(state, [("everything", true), ("recorder", false)]);
    recorder("/__up", "").await;
    assert_eq!(call_text(&recorded, "add", json!({ "a": 1, "b": 2 })).await.unwrap().0, "3\n{\"sum\":3}");
    let servers = fetch_relayed_servers(proxy(), &CancelToken::new()).await.unwrap();
    assert!(servers.iter().all(|s| s.reachable), "back: {servers:?}");
}

#[wasm_bindgen_test]
async fn an_aborted_call_is_cancelled_at_the_server() {
    recorder("/__reset", "").await;
    let recorded = client("recorder");
    let cancel = CancelToken::new();
    recorded.connect(&cancel).await.unwrap();
    let abort = cancel.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo_timers::future::sleep(Duration::from_millis(300)).await;
        abort.cancel();
    });
    let started = js_sys::Date::now();
    let outcome = recorded.call("wait", &json!({ "ms": 20_000 }), &mut |_| {}, &cancel).await;
    assert_eq!(outcome.unwrap_err(), McpError::Aborted);
    assert!(js_sys::Date::now() - started < 5_000.0, "the abort did not wait for the tool");
    let requests = seen().await;
    let call = requests.iter().find(|r| r["body"]["method"] == "tools/call").unwrap();
    let notice = requests.iter().find(|r| r["body"]["method"] == "notifications/cancelled");
    let notice = notice.expect("notifications/cancelled reached the server");
    assert_eq!(notice["body"]["params"]["requestId"], call["body"]["id"]);
    assert_eq!(notice["headers"]["mcp-session-id"], call["headers"]["mcp-session-id"]);
}

#[wasm_bindgen_test]
async fn the_notification_stream_is_opened_and_aborted() {
    recorder("/__reset", "").await;
    let recorded = client("recorder");
    let cancel = CancelToken::new();
    let abort = cancel.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo_timers::future::sleep(Duration::from_millis(500)).await;
        abort.cancel();
    });
    assert_eq!(recorded.listen(&cancel).await, Err(McpError::Aborted));
    let requests = seen().await;
    let get = requests.iter().find(|r| r["method"] == "GET").expect("the stream was opened");
    assert_eq!(get["headers"]["accept"], "text/event-stream");
    assert!(get["headers"]["mcp-session-id"].is_string());
}

#[wasm_bindgen_test]
async fn the_servers_as_a_run_checks_them() {
    recorder("/__reset", "").await;
    let servers = McpServers::new(Box::new(ProxyRelay { proxy_url: proxy().into(), client_token: None }));
    let cancel = CancelToken::new();
    let checked = servers.check(&|_| false, &cancel).await;
    let state: Vec<(&str, &str, usize)> =
        checked.iter().map(|s| (s.name.as_str(), s.status.as_str(), s.tools.len())).collect();
    assert_eq!(state[1], ("recorder", "ready", 5), "{state:?}");
    assert_eq!(state[0].1, "ready", "{state:?}");

    // A server that takes requests and never answers is given up on after
    // LIST_TIMEOUT, well before the relay's own limit.
    recorder("/__silent", "").await;
    servers.stale();
    let started = js_sys::Date::now();
    let checked = servers.check(&|name| name == "everything", &cancel).await;
    let waited = js_sys::Date::now() - started;
    recorder("/__up", "").await;
    let recorded = &checked[1];
    assert_eq!(recorded.status.as_str(), "unreachable");
    assert!(recorded.problem.as_deref().unwrap_or_default().contains("in time"), "{:?}", recorded.problem);
    let limit = LIST_TIMEOUT.as_millis() as f64;
    assert!(waited >= limit - 500.0 && waited < limit + 5_000.0, "waited {waited} ms");
    assert_eq!(checked[0].status.as_str(), "off", "the server turned off was not asked");
    assert!(checked[0].tools.len() > 3, "it keeps the tools it had");
}
