//! MCP tools in the agent, in Chromium: the `Agent` JS class, a scripted
//! model (the fake upstream), the real proxy and its relay, the reference
//! server (`@modelcontextprotocol/server-everything`) and the recorder
//! (tests/mcp/recorder.mjs), all started by `cargo xtask test`. A call of
//! an MCP tool goes through the registry's path: its result reaches the
//! next request fenced, read-only tools run with the other reads of their
//! step, a destructive one waits for the person, a tool turned off leaves
//! the next request, a server that goes away is a tool error and the run
//! goes on, and an abort cancels the call at the server.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use atelier_agent::cancel::CancelToken;
use atelier_agent::mcp::fetch_relayed_servers;
use atelier_agent::platform::random_id;
use atelier_agent::wasm::agent::JsAgent;
use js_sys::Reflect;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::{log, post_text, script, PROXY};

const RECORDER: Option<&str> = option_env!("ATELIER_TEST_RECORDER");

fn js(v: Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap()
}

fn prop(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &k.into()).unwrap()
}

fn json_of(v: &JsValue) -> Value {
    serde_json::from_str(&js_sys::JSON::stringify(v).unwrap().as_string().unwrap()).unwrap()
}

async fn open() -> JsAgent {
    let config = json!({ "proxyUrl": PROXY.expect("ATELIER_TEST_PROXY"), "dbName": format!("mcp-{}", random_id()) });
    let agent = JsFuture::from(JsAgent::open(js(config))).await.unwrap();
    <JsAgent as wasm_bindgen::convert::TryFromJsValue>::try_from_js_value(agent).unwrap_or_else(|_| panic!("an Agent"))
}

fn options() -> Option<atelier_agent::wasm::agent::RunOptionsJs> {
    Some(js(json!({ "agentMode": true })).unchecked_into())
}

async fn recorder(path: &str) {
    let recorder = RECORDER.expect("run through `cargo xtask test` (ATELIER_TEST_RECORDER)");
    post_text(&format!("{recorder}{path}"), "").await;
    if path == "/__reset" {
        // After a test that took it down, until the proxy's health has it back.
        for _ in 0..100 {
            let servers = fetch_relayed_servers(PROXY.unwrap(), &CancelToken::new()).await.unwrap_or_default();
            if servers.iter().all(|s| s.reachable) {
                return;
            }
            gloo_timers::future::sleep(std::time::Duration::from_millis(200)).await;
        }
        panic!("the recorder did not come back");
    }
}

/// The `tools/call` and `notifications/cancelled` requests the recorder received.
async fn recorder_calls() -> Vec<Value> {
    let recorder = RECORDER.unwrap();
    let window = web_sys::window().unwrap();
    let response: web_sys::Response =
        JsFuture::from(window.fetch_with_str(&format!("{recorder}/__seen"))).await.unwrap().unchecked_into();
    let text = JsFuture::from(response.text().unwrap()).await.unwrap().as_string().unwrap();
    let seen: Vec<Value> = serde_json::from_str(&text).unwrap();
    let wanted = |r: &Value| matches!(r["body"]["method"].as_str(), Some("tools/call" | "notifications/cancelled"));
    seen.into_iter().filter(wanted).collect()
}

/// The chat requests the fake upstream received (searches aside).
async fn chat_requests() -> Vec<Value> {
    let log = log().await;
    log["requests"].as_array().unwrap().iter().filter(|r| r["path"] != "/search").cloned().collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    let tools = request["body"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

fn tool_messages(request: &Value) -> Vec<String> {
    let messages = request["body"]["messages"].as_array().unwrap();
    messages.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap().to_owned()).collect()
}

fn route() -> Value {
    json!({ "type": "text", "text": "{\"strategy\":\"general_agent\",\"reasoning\":\"tools\"}" })
}

fn call(calls: Value) -> Value {
    json!({ "type": "tool_calls", "calls": calls })
}

#[wasm_bindgen_test]
async fn a_servers_progress_reaches_the_page_as_events_through_the_relay() {
    let tool = "mcp_everything_trigger-long-running-operation";
    script(json!([
        route(),
        call(json!([{ "name": tool, "arguments": { "duration": 1, "steps": 2 } }])),
        { "type": "text", "text": "It finished." }
    ]))
    .await;
    let agent = open().await;
    let events = js_sys::Array::new();
    let sink = events.clone();
    let on_event = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        sink.push(&e);
    });
    let opts = options();
    Reflect::set(opts.as_ref().unwrap(), &"onEvent".into(), on_event.as_ref().unchecked_ref::<js_sys::Function>())
        .unwrap();
    let result = JsFuture::from(agent.send("s".into(), "Run the long operation".into(), opts)).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"), "{:?}", json_of(&result));
    let progress: Vec<Value> = events.iter().map(|e| json_of(&e)).filter(|e| e["type"] == "progress").collect();
    let seen: Vec<(Value, Value, Value)> =
        progress.iter().map(|e| (e["tool"].clone(), e["progress"].clone(), e["total"].clone())).collect();
    assert_eq!(seen, [(json!(tool), json!(1), json!(2)), (json!(tool), json!(2), json!(2))], "{progress:?}");
    assert!(progress.iter().all(|e| e["callId"].is_string() && e["message"].is_null()), "{progress:?}");
    let results = tool_messages(&chat_requests().await[2]);
    assert!(results[0].contains("Long running operation completed"), "{results:?}");
}

#[wasm_bindgen_test]
async fn mcp_tools_are_called_through_the_relay_and_their_results_reach_the_model_fenced() {
    recorder("/__reset").await;
    script(json!([
        route(),
        call(json!([{ "name": "mcp_everything_echo", "arguments": { "message": "hello through the relay" } }])),
        // Two reads of one step: they run together.
        call(json!([
            { "name": "mcp_recorder_wait", "arguments": { "ms": 3000 } },
            { "name": "mcp_recorder_add", "arguments": { "a": 40, "b": 2 } }
        ])),
        { "type": "text", "text": "The echo came back and the sum is 42." }
    ]))
    .await;
    let agent = open().await;
    let result = JsFuture::from(agent.send("s".into(), "Echo and add for me".into(), options())).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"), "{:?}", json_of(&result));

    let requests = chat_requests().await;
    let offered = tool_names(&requests[1]);
    for name in ["mcp_everything_echo", "mcp_everything_get-sum", "mcp_recorder_add", "mcp_recorder_erase_note"] {
        assert!(offered.iter().any(|n| n == name), "{name} offered: {offered:?}");
    }
    let add =
        requests[1]["body"]["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp_recorder_add");
    assert_eq!(add.unwrap()["function"]["parameters"]["required"], json!(["a", "b"]), "the server's schema");
    let echoed = tool_messages(&requests[2]);
    assert!(echoed[0].starts_with("⟦quoted web material: result of the MCP tool echo"), "{echoed:?}");
    assert!(echoed[0].contains("hello through the relay"), "{echoed:?}");
    let results = tool_messages(&requests[3]);
    assert!(results[1].contains("waited") && results[2].contains("42"), "{results:?}");

    // Both calls reached the server (in either order: they were sent together).
    let calls = recorder_calls().await;
    assert_eq!(calls.len(), 2, "{calls:?}");
    let named = |name: &str| {
        calls.iter().find(|c| c["body"]["params"]["name"] == name).unwrap_or_else(|| panic!("{name}: {calls:?}"))
    };
    let (wait, add) = (named("wait"), named("add"));
    // Run one after the other (in the model's order), add would reach the server after wait's 3 s.
    let apart = add["at"].as_f64().unwrap() - wait["at"].as_f64().unwrap();
    assert!(apart < 2500.0, "the second read did not wait for the first: {apart} ms apart");
}

#[wasm_bindgen_test]
async fn a_destructive_mcp_tool_waits_for_the_person() {
    recorder("/__reset").await;
    script(json!([
        route(),
        call(json!([{ "name": "mcp_recorder_erase_note", "arguments": { "title": "old draft" } }])),
        { "type": "text", "text": "Erased." }
    ]))
    .await;
    let agent = open().await;
    let result = JsFuture::from(agent.send("s".into(), "Erase my old draft note".into(), options())).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("interrupted"));
    assert_eq!(prop(&prop(&result, "review"), "tool").as_string().as_deref(), Some("mcp_recorder_erase_note"));
    assert!(recorder_calls().await.is_empty(), "nothing reached the server before the approval");
    let decision = js(json!({ "approved": true }));
    let done = JsFuture::from(agent.resume("s".into(), decision, options())).await.unwrap();
    assert_eq!(prop(&done, "status").as_string().as_deref(), Some("completed"));
    let calls = recorder_calls().await;
    assert_eq!(calls[0]["body"]["params"]["arguments"], json!({ "title": "old draft" }));
}

#[wasm_bindgen_test]
async fn a_tool_turned_off_leaves_the_next_request() {
    recorder("/__reset").await;
    script(json!([route(), { "type": "text", "text": "ok" }])).await;
    let agent = open().await;
    let patch = js(json!({ "mcp": { "recorder": { "tools": { "add": false } }, "everything": { "enabled": false } } }));
    JsFuture::from(agent.update_settings(patch)).await.unwrap();
    JsFuture::from(agent.send("s".into(), "Hi".into(), options())).await.unwrap();
    let offered = tool_names(&chat_requests().await[1]);
    assert!(offered.iter().any(|n| n == "mcp_recorder_wait"), "{offered:?}");
    assert!(!offered.iter().any(|n| n == "mcp_recorder_add" || n.starts_with("mcp_everything_")), "{offered:?}");

    let servers = json_of(&JsFuture::from(agent.mcp_servers()).await.unwrap());
    assert_eq!(servers[0]["name"], "everything");
    assert_eq!(servers[0]["status"], "off");
    let recorded = &servers[1];
    assert_eq!(recorded["status"], "ready", "{servers}");
    let add = recorded["tools"].as_array().unwrap().iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!((add["enabled"].as_bool(), add["readOnly"].as_bool()), (Some(false), Some(true)), "{add}");
    assert_eq!(add["agentName"], "mcp_recorder_add");
}

#[wasm_bindgen_test]
async fn a_server_that_goes_away_is_a_tool_error_and_the_run_goes_on() {
    recorder("/__reset").await;
    script(json!([
        route(),
        call(json!([{ "name": "mcp_recorder_add", "arguments": { "a": 1, "b": 2 } }])),
        { "type": "text", "text": "The notes server is not answering." }
    ]))
    .await;
    let agent = open().await;
    // Checked (ready), then gone before the call.
    let servers = json_of(&JsFuture::from(agent.mcp_servers()).await.unwrap());
    assert_eq!(servers[1]["status"], "ready", "{servers}");
    recorder("/__down").await;
    let result = JsFuture::from(agent.send("s".into(), "Add 1 and 2".into(), options())).await;
    recorder("/__up").await;
    let result = result.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"), "{:?}", json_of(&result));
    let requests = chat_requests().await;
    let answer = tool_messages(&requests[2]);
    assert!(
        answer[0].starts_with("Error: add of the MCP server recorder") && answer[0].contains("mcp_unreachable"),
        "{answer:?}"
    );
    // The next check found it gone: its tools left the request that followed.
    assert!(!tool_names(&requests[2]).iter().any(|n| n.starts_with("mcp_recorder_")), "{:?}", tool_names(&requests[2]));
}

#[wasm_bindgen_test]
async fn an_abort_cancels_the_call_at_the_server() {
    recorder("/__reset").await;
    script(json!([route(), call(json!([{ "name": "mcp_recorder_wait", "arguments": { "ms": 20000 } }]))])).await;
    let agent = open().await;
    let controller = web_sys::AbortController::new().unwrap();
    let opts = options();
    Reflect::set(opts.as_ref().unwrap(), &"signal".into(), &controller.signal()).unwrap();
    let stop = controller.clone();
    wasm_bindgen_futures::spawn_local(async move {
        // Once the call reached the server.
        for _ in 0..200 {
            if !recorder_calls().await.is_empty() {
                break;
            }
            gloo_timers::future::sleep(std::time::Duration::from_millis(50)).await;
        }
        stop.abort();
    });
    let started = js_sys::Date::now();
    let result = JsFuture::from(agent.send("s".into(), "Wait for it".into(), opts)).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("aborted"));
    assert!(js_sys::Date::now() - started < 15_000.0, "the abort did not wait for the tool");
    let calls = recorder_calls().await;
    let methods: Vec<&str> = calls.iter().map(|c| c["body"]["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["tools/call", "notifications/cancelled"]);
    assert_eq!(calls[1]["body"]["params"]["requestId"], calls[0]["body"]["id"]);
}
