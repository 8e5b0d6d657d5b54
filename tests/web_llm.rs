//! Browser tests of the LLM client (`ProxyModel`) in Chromium, against the
//! real atelier-proxy binary and the scripted fake upstream that
//! `cargo xtask test` starts (their URLs arrive as build-time env vars).
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use atelier_agent::cancel::CancelToken;
use atelier_agent::llm::{
    ask_structured, ChatModel, ChatRequest, Delta, LlmError, Message, ProxyConfig, ProxyModel, RetryPolicy,
    StructuredPath,
};
use serde_json::{json, Value};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::{control, log, script, FAKE, PROXY};

fn urls() -> (&'static str, &'static str) {
    (
        PROXY.expect("run through `cargo xtask test`, which starts the proxy (ATELIER_TEST_PROXY)"),
        FAKE.expect("run through `cargo xtask test`, which starts the fake upstream (ATELIER_TEST_FAKE)"),
    )
}

fn model() -> ProxyModel {
    let (proxy, _) = urls();
    ProxyModel::new(ProxyConfig {
        base_url: proxy.to_owned(),
        client_token: None,
        retry: RetryPolicy { max_retries: 2, base_delay: Duration::from_millis(10), ..RetryPolicy::default() },
    })
}

fn request() -> ChatRequest {
    ChatRequest::new("main", vec![Message::user("hello")])
}

#[wasm_bindgen_test]
async fn deltas_arrive_before_the_answer_is_complete() {
    script(json!([{ "type": "hold", "first": "Hel", "rest": "lo, world" }])).await;
    let deltas = Rc::new(RefCell::new(Vec::new()));
    let released = Rc::new(RefCell::new(false));
    let (d, r) = (deltas.clone(), released.clone());
    // The fake holds the rest of the answer until it is released, and we
    // release it only from the first delta: a buffering path would hang.
    let mut on_delta = move |delta: Delta| {
        d.borrow_mut().push(delta);
        if !*r.borrow() {
            *r.borrow_mut() = true;
            wasm_bindgen_futures::spawn_local(async {
                control("/__release", json!({})).await;
            });
        }
    };
    let outcome = model().chat(request(), &mut on_delta, &CancelToken::new()).await.unwrap();
    assert_eq!(outcome.message.text(), "Hello, world");
    let deltas = deltas.borrow();
    assert!(deltas.len() >= 2, "{deltas:?}");
    assert_eq!(deltas[0], Delta::Text { text: "Hel".into() });
}

#[wasm_bindgen_test]
async fn abort_mid_stream_ends_the_request_upstream() {
    script(json!([{ "type": "hold", "first": "partial" }])).await;
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let mut on_delta = move |_| c.cancel();
    let result = model().chat(request(), &mut on_delta, &cancel).await;
    assert_eq!(result.unwrap_err(), LlmError::Aborted);
    let mut disconnects = 0;
    for _ in 0..40 {
        disconnects = log().await["disconnects"].as_u64().unwrap();
        if disconnects > 0 {
            break;
        }
        gloo_timers::future::TimeoutFuture::new(50).await;
    }
    assert_eq!(disconnects, 1, "the fake upstream saw the client leave");
}

#[wasm_bindgen_test]
async fn retries_after_a_429() {
    script(json!([
        { "type": "error", "status": 429, "headers": { "retry-after": "0" }, "body": { "error": { "message": "slow down" } } },
        { "type": "text", "text": "after the retry" }
    ]))
    .await;
    let outcome = model().chat(request(), &mut |_| {}, &CancelToken::new()).await.unwrap();
    assert_eq!(outcome.message.text(), "after the retry");
    assert_eq!(log().await["requests"].as_array().unwrap().len(), 2);
}

#[wasm_bindgen_test]
async fn tool_calls_stream_through() {
    script(
        json!([{ "type": "tool_calls", "calls": [{ "name": "web_search", "arguments": { "query": "東京 天気" } }] }]),
    )
    .await;
    let outcome = model().chat(request(), &mut |_| {}, &CancelToken::new()).await.unwrap();
    let call = &outcome.message.tool_calls()[0];
    assert_eq!(call.function.name, "web_search");
    assert_eq!(serde_json::from_str::<Value>(&call.function.arguments).unwrap(), json!({ "query": "東京 天気" }));
    // No model configured on the proxy: the alias resolves to a chat model the
    // upstream lists, never forwarded as it is.
    assert_eq!(log().await["requests"][0]["body"]["model"], "fake-chat");
}

#[wasm_bindgen_test]
async fn errors_are_typed() {
    script(json!([{ "type": "error", "status": 401, "body": { "error": { "message": "bad key" } } }])).await;
    let err = model().chat(request(), &mut |_| {}, &CancelToken::new()).await.unwrap_err();
    assert_eq!(err.code(), "auth");
    assert_eq!(log().await["requests"].as_array().unwrap().len(), 1, "auth errors are not retried");
}

#[wasm_bindgen_test]
async fn structured_output_falls_back_to_the_prompt() {
    script(json!([
        { "type": "error", "status": 400, "body": { "error": { "message": "response_format json_schema is not supported" } } },
        { "type": "text", "text": "Here you go: {\"strategy\": \"writing\"}" }
    ]))
    .await;
    let schema =
        json!({ "type": "object", "properties": { "strategy": { "type": "string" } }, "required": ["strategy"] });
    let out = ask_structured(&model(), request(), "route", &schema, &CancelToken::new()).await.unwrap();
    assert_eq!(out.path, StructuredPath::Prompt);
    assert_eq!(out.value, json!({ "strategy": "writing" }));
    let requests = log().await["requests"].clone();
    assert!(requests[0]["body"]["response_format"].is_object());
    assert!(requests[1]["body"].get("response_format").is_none());
}
