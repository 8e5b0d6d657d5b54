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

/// Forgets earlier requests, then speaks `dialect` with `chat` queued.
async fn script_in(dialect: &str, chat: Value) {
    control("/__reset", json!({})).await;
    control("/__script", json!({ "dialect": dialect, "chat": chat })).await;
}

fn open_url_tool() -> Vec<atelier_agent::llm::ToolSpec> {
    vec![atelier_agent::llm::ToolSpec::function(
        "open_url",
        "Open a web page.",
        json!({ "type": "object", "properties": { "url": { "type": "string" } }, "required": ["url"] }),
    )]
}

/// Each dialect the fake upstream speaks, through the real proxy: a research
/// turn whose model message opens two pages at once, then the follow-up
/// turn with that history sent back (in the layout the strictest of them,
/// Mistral's, accepts), answered with its reasoning apart from the text.
#[wasm_bindgen_test]
async fn every_dialect_gives_a_research_turn_and_its_follow_up() {
    let dialects = [
        "openai",
        "ollama-v1",
        "gemini",
        "deepseek",
        "mistral",
        "think",
        "think-close",
        "object-args",
        "openrouter",
        "llamacpp",
        "vllm",
        "azure",
        "framing",
        "text-calls",
    ];
    let calls = json!([{ "name": "open_url", "arguments": { "url": "https://a.example" } },
                       { "name": "open_url", "arguments": { "url": "https://b.example" } }]);
    for dialect in dialects {
        script_in(
            dialect,
            json!([
                { "type": "tool_calls", "calls": calls, "reasoning": "Both pages, at once." },
                { "type": "text", "text": "Page B is longer.", "reasoning": "B has more words." }
            ]),
        )
        .await;
        let model = model();
        let mut first = ChatRequest::new("main", vec![Message::user("Compare a.example and b.example")]);
        first.tools = open_url_tool();
        // Calls written as text: the filter the agent composes around the model.
        let mut filter = atelier_agent::llm::TextCallFilter::for_request(&first);
        let mut shown = String::new();
        let outcome = model
            .chat(
                first.clone(),
                &mut |d| {
                    filter.delta(d, &mut |d| {
                        if let Delta::Text { text } = d {
                            shown.push_str(&text)
                        }
                    })
                },
                &CancelToken::new(),
            )
            .await
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        let outcome = filter.finish(outcome, &mut |_| {});
        assert!(!shown.contains("tool_call"), "{dialect}: a written call is never shown");
        let got: Vec<(String, Value)> = outcome
            .message
            .tool_calls()
            .iter()
            .map(|c| (c.function.name.clone(), serde_json::from_str(&c.function.arguments).unwrap()))
            .collect();
        let want = vec![
            ("open_url".to_owned(), json!({ "url": "https://a.example" })),
            ("open_url".to_owned(), json!({ "url": "https://b.example" })),
        ];
        assert_eq!(got, want, "{dialect}: two calls, never merged");
        assert_eq!(outcome.finish_reason.as_deref(), Some("tool_calls"), "{dialect}");
        assert!(
            !outcome.message.text().contains("think") && !outcome.message.text().contains("tool_call"),
            "{dialect}"
        );
        let shows_reasoning =
            !matches!(dialect, "openai" | "gemini" | "mistral" | "object-args" | "azure" | "framing" | "text-calls");
        if shows_reasoning {
            assert_eq!(outcome.reasoning.as_deref().map(str::trim), Some("Both pages, at once."), "{dialect}");
            assert_eq!(outcome.message.tool_calls()[0].reasoning, outcome.reasoning, "{dialect}: kept with the calls");
        }
        // The follow-up turn: the calls, their results, the answer, a new question.
        let mut history = first.messages.clone();
        history.push(outcome.message.clone());
        for (call, page) in outcome.message.tool_calls().iter().zip(["Page A", "Page B, longer"]) {
            history.push(Message::tool(call.id.clone(), page));
        }
        history.push(Message::assistant("I read both."));
        history.push(Message::user("Which is longer?"));
        let mut follow_up = ChatRequest::new("main", history);
        follow_up.tools = open_url_tool();
        follow_up.echo_reasoning = dialect == "deepseek";
        let answer =
            model.chat(follow_up, &mut |_| {}, &CancelToken::new()).await.unwrap_or_else(|e| panic!("{dialect}: {e}"));
        assert_eq!(answer.message.text(), "Page B is longer.", "{dialect}: the answer alone");
        if shows_reasoning {
            assert_eq!(answer.reasoning.as_deref().map(str::trim), Some("B has more words."), "{dialect}");
        }
        let sent = &log().await["requests"][1]["body"]["messages"][1];
        assert_eq!(
            sent["reasoning_content"].is_string(),
            dialect == "deepseek",
            "{dialect}: reasoning sent back only where required"
        );
        assert!(sent["tool_calls"][0].get("reasoning").is_none(), "{dialect}");
    }
}

#[wasm_bindgen_test]
async fn deepseek_refuses_a_tool_call_turn_without_its_reasoning_and_says_so() {
    let call = {
        let mut c = atelier_agent::llm::ToolCall::new("call_0", "open_url", &json!({ "url": "u" }));
        c.reasoning = Some("Open it.".into());
        c
    };
    let history = vec![
        Message::user("open u"),
        Message::Assistant { content: None, tool_calls: vec![call] },
        Message::tool("call_0", "page"),
        Message::assistant("Done."),
        Message::user("again"),
    ];
    script_in("deepseek", json!([{ "type": "text", "text": "ok" }, { "type": "text", "text": "ok again" }])).await;
    // The refusal is learned by the model and the request sent again with the reasoning.
    let model = model();
    let first = model.chat(ChatRequest::new("main", history.clone()), &mut |_| {}, &CancelToken::new()).await.unwrap();
    assert_eq!(first.message.text(), "ok");
    let echoed = |request: &Value| {
        let messages = request["body"]["messages"].as_array().unwrap();
        messages.iter().find(|m| m["tool_calls"].is_array()).unwrap().get("reasoning_content").cloned()
    };
    let log = control("/__log", json!({})).await;
    let chats: Vec<&Value> = log["requests"].as_array().unwrap().iter().filter(|r| r["path"] != "/search").collect();
    assert_eq!(chats.len(), 2, "refused once, then sent again: {log}");
    assert_eq!(echoed(chats[0]), None, "the first request had no reasoning");
    assert_eq!(echoed(chats[1]), Some(json!("Open it.")), "the second sent it back");
    // Learned once: the next request of the same model sends it at once.
    let next = model.chat(ChatRequest::new("main", history), &mut |_| {}, &CancelToken::new()).await.unwrap();
    assert_eq!(next.message.text(), "ok again");
    let log = control("/__log", json!({})).await;
    let chats: Vec<&Value> = log["requests"].as_array().unwrap().iter().filter(|r| r["path"] != "/search").collect();
    assert_eq!(chats.len(), 3, "no refusal the second time: {log}");
    assert_eq!(echoed(chats[2]), Some(json!("Open it.")));
}

#[wasm_bindgen_test]
async fn an_error_inside_the_stream_is_retried_only_before_anything_was_shown() {
    script_in("openrouter", json!([{ "type": "inband_error" }, { "type": "text", "text": "after the retry" }])).await;
    let outcome = model().chat(request(), &mut |_| {}, &CancelToken::new()).await.unwrap();
    assert_eq!(outcome.message.text(), "after the retry");
    assert_eq!(log().await["requests"].as_array().unwrap().len(), 2);

    script_in(
        "openrouter",
        json!([{ "type": "inband_error", "text": "Half an ans" }, { "type": "text", "text": "never" }]),
    )
    .await;
    let err = model().chat(request(), &mut |_| {}, &CancelToken::new()).await.unwrap_err();
    assert_eq!(err.code(), "upstream_unavailable");
    assert!(err.to_string().contains("Provider disconnected"), "{err}");
    assert_eq!(log().await["requests"].as_array().unwrap().len(), 1, "shown text is never repeated by a retry");
}

#[wasm_bindgen_test]
async fn a_model_that_only_closes_its_think_block_streams_reasoning_from_its_second_answer() {
    script_in(
        "think-close",
        json!([{ "type": "text", "text": "One.", "reasoning": "First thoughts." },
               { "type": "text", "text": "Two.", "reasoning": "Second thoughts." }]),
    )
    .await;
    let model = model();
    let mut first = Vec::new();
    let one = model.chat(request(), &mut |d| first.push(d), &CancelToken::new()).await.unwrap();
    assert_eq!((one.message.text(), one.reasoning.as_deref().map(str::trim)), ("One.", Some("First thoughts.")));
    assert!(first.iter().any(|d| matches!(d, Delta::WasReasoning { .. })), "{first:?}");
    let mut second = Vec::new();
    let two = model.chat(request(), &mut |d| second.push(d), &CancelToken::new()).await.unwrap();
    assert_eq!(two.message.text(), "Two.");
    assert!(matches!(&second[0], Delta::Reasoning { .. }), "learnt: reasoning from the first piece: {second:?}");
    assert!(!second.iter().any(|d| matches!(d, Delta::Text { text } if text.contains("thoughts"))));
}
