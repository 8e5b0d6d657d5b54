//! The real proxy binary in front of a fake Ollama that truncates as the
//! real one does: a found or configured Ollama never cuts a request
//! silently, `/api/health` says the window it really processes, and the
//! native answers come back in OpenAI's shape (tool calls, thinking, usage).

mod support;

use serde_json::{json, Value};
use support::ollama::{FakeModel, FakeOllama, NativeReply, DEFAULT_CONTEXT};
use support::{client, Proxy};

fn models() -> Vec<FakeModel> {
    vec![
        FakeModel {
            name: "qwen3:8b",
            family: "qwen3",
            parameter_size: "8.2B",
            trained: 40_960,
            capabilities: &["completion", "tools", "thinking"],
        },
        FakeModel {
            name: "gemma3:270m",
            family: "gemma3",
            parameter_size: "268M",
            trained: 32_768,
            capabilities: &["completion"],
        },
        FakeModel {
            name: "llama3.1:8b",
            family: "llama",
            parameter_size: "8.0B",
            trained: 131_072,
            capabilities: &["completion", "tools"],
        },
    ]
}

/// The proxy in front of `ollama`: configured by URL, or found on its port.
fn proxy_for(ollama: &FakeOllama, found: bool) -> Proxy {
    if found {
        Proxy::start(&[("ATELIER_AUTODETECT", "true".into()), ("ATELIER_LOCAL_PORTS", ollama.addr.port().to_string())])
    } else {
        Proxy::start(&[("ATELIER_UPSTREAM_URL", ollama.base()), ("ATELIER_MODEL_MAIN", "qwen3:8b".into())])
    }
}

/// A conversation of about `tokens` tokens (4 bytes of JSON each).
fn long_messages(tokens: usize) -> Value {
    let words = "The rain in the valley fell for days. ".repeat(tokens * 4 / 38);
    json!([{"role": "system", "content": "You help a writer. KEEP-THIS-RULE."}, {"role": "user", "content": words}])
}

async fn post(proxy: &Proxy, body: Value) -> (u16, String) {
    let response = client().post(proxy.url("/api/chat")).json(&body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The SSE events' JSON.
fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_ten_thousand_token_request_is_processed_whole() {
    for found in [false, true] {
        let ollama = FakeOllama::start(models());
        let messages = long_messages(10_000);
        // Straight to Ollama's OpenAI endpoint, the prompt is cut to 4,096
        // tokens without an error: what the proxy must never let happen.
        let direct: Value = client()
            .post(format!("{}/chat/completions", ollama.base()))
            .json(&json!({"model": "qwen3:8b", "messages": messages}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(direct["usage"]["prompt_tokens"], DEFAULT_CONTEXT, "the fake truncates as the real server does");

        let proxy = proxy_for(&ollama, found);
        let body =
            json!({"model": "main", "stream": true, "stream_options": {"include_usage": true}, "messages": messages});
        let (status, text) = post(&proxy, body).await;
        assert_eq!(status, 200, "{text}");
        let chat = ollama.chats().pop().unwrap();
        assert_eq!(chat.path, "/api/chat", "found={found}: the native API, where num_ctx counts");
        assert!(chat.tokens > 9_900, "{}", chat.tokens);
        assert_eq!(chat.processed, chat.tokens, "found={found}: processed whole");
        assert_eq!(chat.body["options"]["num_ctx"], 32_768);
        assert_eq!(chat.body["truncate"], false);
        let usage = events(&text).last().unwrap()["usage"].clone();
        assert_eq!(usage["prompt_tokens"], chat.tokens, "the usage says what Ollama processed");
        assert!(text.ends_with("data: [DONE]\n\n"));
    }
}

#[tokio::test]
async fn health_reports_the_window_the_server_really_processes() {
    let ollama = FakeOllama::start(models());
    ollama.load("llama3.1:8b", 65_536);
    let proxy = proxy_for(&ollama, true);
    let health: Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    let models = &health["chat"]["upstream"]["models"];
    let entry = |id: &str| models["available"].as_array().unwrap().iter().find(|m| m["id"] == id).cloned().unwrap();
    // Trained 40,960, capped at the ceiling; trained 32,768; loaded with
    // 65,536 already (the server was set up with more), trained 131,072.
    assert_eq!(entry("qwen3:8b")["contextWindow"], 32_768, "{health}");
    assert_eq!(entry("gemma3:270m")["contextWindow"], 32_768);
    assert_eq!(entry("llama3.1:8b")["contextWindow"], 65_536);
    assert_eq!(entry("qwen3:8b")["capabilities"], json!({"tools": true, "thinking": true, "vision": false}));
    assert_eq!(entry("gemma3:270m")["capabilities"], json!({"tools": false, "thinking": false, "vision": false}));
    assert_eq!(models["main"]["id"], "qwen3:8b");
    assert_eq!(models["main"]["contextWindow"], 32_768);
    assert_eq!(models["sub"]["id"], "gemma3:270m");
    assert_eq!(models["sub"]["contextWindow"], 32_768);

    // What health says is what a request gets: a request that fills the
    // window is processed whole, one above it is refused.
    let (status, _) = post(&proxy, json!({"model": "main", "messages": long_messages(30_000)})).await;
    assert_eq!(status, 200);
    assert_eq!(ollama.chats().last().unwrap().processed, ollama.chats().last().unwrap().tokens);
    // The ceiling is a setting; a model the server runs with more keeps it.
    let fresh = FakeOllama::start(self::models());
    let ceiling =
        Proxy::start(&[("ATELIER_UPSTREAM_URL", fresh.base()), ("ATELIER_OLLAMA_MAX_CONTEXT", "8192".into())]);
    let health: Value = client().get(ceiling.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["upstream"]["models"]["main"]["contextWindow"], 8192, "{health}");
    let (status, text) = post(&ceiling, json!({"model": "main", "messages": long_messages(9_000)})).await;
    assert_eq!(status, 400, "above the ceiling: {text}");
}

#[tokio::test]
async fn a_request_above_the_window_is_refused_never_cut() {
    let ollama = FakeOllama::start(models());
    let proxy = proxy_for(&ollama, false);
    let (status, text) = post(&proxy, json!({"model": "main", "messages": long_messages(40_000)})).await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["type"], "context_overflow");
    assert!(body["error"]["message"].as_str().unwrap().contains("ATELIER_OLLAMA_MAX_CONTEXT"), "{text}");
    assert!(ollama.chats().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn parallel_calls_thinking_and_usage_come_back_in_openai_shape() {
    let ollama = FakeOllama::start(models());
    let proxy = proxy_for(&ollama, true);
    let calls =
        || vec![("open_url", json!({"url": "https://a.example"})), ("open_url", json!({"url": "https://b.example"}))];
    let tools = json!([{"type": "function", "function": {"name": "open_url", "description": "Open a page.", "parameters": {"type": "object"}}}]);
    ollama.push(NativeReply::Calls("Both pages, at once.", calls()));
    let body = json!({"model": "main", "stream": true, "stream_options": {"include_usage": true}, "tools": tools,
                      "messages": [{"role": "user", "content": "Compare a.example and b.example"}]});
    let (status, text) = post(&proxy, body.clone()).await;
    assert_eq!(status, 200, "{text}");
    let events = events(&text);
    let reasoning: String = events.iter().filter_map(|e| e["choices"][0]["delta"]["reasoning"].as_str()).collect();
    assert_eq!(reasoning, "Both pages, at once.");
    let streamed: Vec<&Value> = events.iter().filter_map(|e| e["choices"][0]["delta"]["tool_calls"].get(0)).collect();
    assert_eq!(streamed.len(), 2);
    assert_eq!((streamed[0]["index"].as_u64(), streamed[1]["index"].as_u64()), (Some(0), Some(1)));
    assert_ne!(streamed[0]["id"], streamed[1]["id"]);
    let args: Value = serde_json::from_str(streamed[1]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"url": "https://b.example"}), "object arguments as JSON text");
    assert!(events.iter().any(|e| e["choices"][0]["finish_reason"] == "tool_calls"));
    assert_eq!(ollama.chats()[0].body["tools"], tools);

    // Not streamed: one completion.
    ollama.push(NativeReply::Calls("Again.", calls()));
    let mut whole = body.clone();
    whole["stream"] = json!(false);
    let (status, text) = post(&proxy, whole).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(answer["choices"][0]["message"]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(answer["choices"][0]["message"]["reasoning"], "Again.");
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    // The follow-up turn: the history with both calls and results, in
    // Ollama's shape (object arguments, the tool's name on each result).
    let history = json!([
        {"role": "user", "content": "Compare a.example and b.example"},
        {"role": "assistant", "content": null, "reasoning_content": "Both pages, at once.", "tool_calls": [
            {"id": streamed[0]["id"], "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"https://a.example\"}"}},
            {"id": streamed[1]["id"], "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"https://b.example\"}"}}]},
        {"role": "tool", "tool_call_id": streamed[0]["id"], "content": "Page A"},
        {"role": "tool", "tool_call_id": streamed[1]["id"], "content": "Page B"},
        {"role": "user", "content": "Which is longer?"}
    ]);
    ollama.push(NativeReply::Text("B is longer."));
    let (status, text) =
        post(&proxy, json!({"model": "main", "stream": true, "tools": tools, "messages": history})).await;
    assert_eq!(status, 200);
    assert!(text.contains("B is longer."), "{text}");
    let sent = ollama.chats().last().unwrap().body["messages"].clone();
    assert_eq!(sent[1]["tool_calls"][1]["function"]["arguments"], json!({"url": "https://b.example"}));
    assert_eq!(sent[1]["thinking"], "Both pages, at once.");
    assert_eq!((sent[2]["tool_name"].as_str(), sent[3]["tool_name"].as_str()), (Some("open_url"), Some("open_url")));
}

#[tokio::test]
async fn the_context_asked_for_never_shrinks_so_the_model_is_not_reloaded() {
    let ollama = FakeOllama::start(models());
    let proxy = proxy_for(&ollama, false);
    for (tokens, num_ctx) in [(2_000, 8_192), (6_000, 16_384), (500, 16_384), (11_000, 32_768), (100, 32_768)] {
        let (status, text) = post(&proxy, json!({"model": "main", "messages": long_messages(tokens)})).await;
        assert_eq!(status, 200, "{text}");
        let chat = ollama.chats().pop().unwrap();
        assert_eq!(chat.body["options"]["num_ctx"], num_ctx, "{tokens} tokens");
        assert_eq!(chat.processed, chat.tokens);
    }
}

#[tokio::test]
async fn a_model_without_tools_gets_them_as_text_and_answers_with_written_calls() {
    let ollama = FakeOllama::start(models());
    let proxy = proxy_for(&ollama, true);
    let tools = json!([{"type": "function", "function": {"name": "open_url", "description": "Opens a page.",
                        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}}}]);
    let written = r#"<tool_call>{"name": "open_url", "arguments": {"url": "https://a.example"}}</tool_call>"#;
    ollama.push(NativeReply::Text(written));
    let history = json!([
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "Open a.example"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "open_url", "arguments": "{\"url\":\"https://b.example\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Page B"}
    ]);
    let (status, text) =
        post(&proxy, json!({"model": "gemma3:270m", "tools": tools, "tool_choice": "auto", "messages": history})).await;
    // Not the server's 400 "does not support tools": the call, written as text, comes back.
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], written);
    let chats = ollama.chats();
    let sent = &chats.last().unwrap().body;
    assert!(sent.get("tools").is_none(), "{sent}");
    let messages = sent["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("You help.") && system.contains("open_url: Opens a page."), "{system}");
    assert!(messages.iter().all(|m| m["role"] != "tool" && m.get("tool_calls").is_none()), "{sent}");
    assert!(messages[2]["content"].as_str().unwrap().contains("<tool_call>"), "{sent}");
    // A model with tools gets them as they are.
    let (status, _) =
        post(&proxy, json!({"model": "qwen3:8b", "tools": tools, "messages": [{"role": "user", "content": "hi"}]}))
            .await;
    assert_eq!(status, 200);
    assert!(ollama.chats().last().unwrap().body["tools"].is_array());
}
