//! The real proxy binary against a scripted fake upstream on 127.0.0.1.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use support::{client, with_upstream, Canary, FakeUpstream, Proxy, Reply, KEY};
use tokio::sync::Notify;

#[tokio::test]
async fn streaming_is_forwarded_byte_for_byte_without_buffering() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    let first = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n".to_vec();
    let rest =
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n"
            .to_vec();
    let gate = Arc::new(Notify::new());
    up.push(Reply::Sse { first: first.clone(), rest: rest.clone(), gate: gate.clone() });

    for path in ["/api/chat"] {
        let response = client()
            .post(proxy.url(path))
            .json(&json!({"model": "main", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        let mut stream = response.bytes_stream();
        let mut received = Vec::new();
        // The upstream holds back the rest until the first bytes reached us:
        // a buffering proxy would deadlock here (and time out).
        while received.len() < first.len() {
            let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .expect("first bytes arrive before the rest is sent");
            received.extend_from_slice(&chunk.unwrap().unwrap());
        }
        gate.notify_one();
        while let Some(chunk) = stream.next().await {
            received.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(received, [first.clone(), rest.clone()].concat(), "byte-exact passthrough");
    }
    let seen = up.seen();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["model"], "big-model", "alias main maps to the configured model");
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {KEY}"));
}

#[tokio::test]
async fn tools_and_options_pass_through_both_paths() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    let answer = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "small-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": "{\"query\":\"rust\"}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    let request = json!({
        "model": "sub",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        "tools": [{"type": "function", "function": {"name": "web_search", "description": "d", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}],
        "tool_choice": "auto",
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
        "temperature": 0.2,
        "max_tokens": 64
    });
    for path in ["/api/chat", "/v1/chat/completions"] {
        up.push(Reply::Json(200, answer.clone(), vec![]));
        let response = client().post(proxy.url(path)).json(&request).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body, answer, "{path}: the answer comes back unchanged");
    }
    for seen in up.seen() {
        let mut expected = request.clone();
        expected["model"] = json!("small-model");
        assert_eq!(seen.body, expected, "every field reaches the upstream");
    }
}

#[tokio::test]
async fn upstream_errors_become_json_errors_with_the_upstream_status() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    let cases = [
        (401, json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}), vec![], "upstream_auth"),
        (429, json!({"error": {"message": "slow down"}}), vec![("retry-after", "7")], "rate_limited"),
        (500, json!({"error": "boom"}), vec![], "upstream_error"),
        (
            400,
            json!({"error": {"message": "response_format json_schema is not supported"}}),
            vec![],
            "structured_output_unsupported",
        ),
        (
            400,
            json!({"error": {"message": "This model's maximum context length is 8192 tokens"}}),
            vec![],
            "context_length_exceeded",
        ),
    ];
    for (status, body, headers, kind) in cases {
        up.push(Reply::Json(status, body, headers));
        let response = client().post(proxy.url("/api/chat")).json(&json!({"messages": []})).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status);
        if status == 429 {
            assert_eq!(response.headers()["retry-after"], "7");
        }
        let text = response.text().await.unwrap();
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"]["type"], kind, "{text}");
        assert_eq!(body["error"]["upstream_status"], status);
        assert!(!text.contains(KEY), "the key leaked into a response: {text}");
    }
    assert!(proxy.log().lines().count() >= 5);
    assert!(!proxy.log().contains(KEY), "the key leaked into the log");
}

/// A server that reports no capabilities and refuses `tools` (each
/// refusal as its server writes it: llama.cpp without `--jinja` answers
/// 500 "tools param requires --jinja flag" (llama.cpp issue #10920 and the
/// reports after it), vLLM without a tool parser 400 "\"auto\" tool choice
/// requires --enable-auto-tool-choice and --tool-call-parser to be set"
/// (vllm#9986), Ollama 400 "<model> does not support tools" (ollama#6027)):
/// the same request goes again with the tools as text, and every later
/// request of that model goes as text at once. Other errors stay errors.
#[tokio::test]
async fn a_server_that_refuses_tools_gets_them_as_text_from_then_on() {
    let refusals = [
        (500, json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})),
        (
            400,
            json!({"object": "error", "message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set", "type": "BadRequestError", "param": null, "code": 400}),
        ),
        (
            400,
            json!({"error": {"message": "registry.ollama.ai/library/gemma3:4b does not support tools", "type": "api_error", "param": null, "code": null}}),
        ),
    ];
    let tools = json!([{"type": "function", "function": {"name": "open_url", "description": "Opens a page.",
                        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}}}]);
    let written = r#"<tool_call>{"name": "open_url", "arguments": {"url": "https://a.example"}}</tool_call>"#;
    for (status, refusal) in refusals {
        let up = FakeUpstream::start();
        let proxy = with_upstream(&up, &[]);
        let chat = |model: &str| {
            json!({"model": model, "tools": tools, "tool_choice": "auto",
                   "messages": [{"role": "system", "content": "You help."}, {"role": "user", "content": "Open a.example"}]})
        };
        up.push(Reply::Json(status, refusal.clone(), vec![]));
        up.push(Reply::Json(200, json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": written}, "finish_reason": "stop"}]}), vec![]));
        let response = client().post(proxy.url("/api/chat")).json(&chat("big-model")).send().await.unwrap();
        let answer: serde_json::Value = response.json().await.unwrap();
        assert_eq!(answer["choices"][0]["message"]["content"], written, "{refusal}: {answer}");
        let seen = up.seen();
        assert_eq!(seen.len(), 2, "{refusal}: the refused request, then the same with the tools as text");
        assert!(seen[0].body["tools"].is_array());
        assert!(seen[1].body.get("tools").is_none() && seen[1].body.get("tool_choice").is_none(), "{}", seen[1].body);
        let system = seen[1].body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("You help.") && system.contains("open_url: Opens a page."), "{system}");
        // Learned: the next request of that model goes as text at once.
        let response = client().post(proxy.url("/api/chat")).json(&chat("big-model")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let seen = up.seen();
        assert_eq!(seen.len(), 3);
        assert!(seen[2].body.get("tools").is_none(), "{}", seen[2].body);
        // Another model of the server still gets its tools as they are, and
        // a refusal that is about something else stays an error.
        up.push(Reply::Json(400, json!({"error": {"message": "messages: field required"}}), vec![]));
        let response = client().post(proxy.url("/api/chat")).json(&chat("small-model")).send().await.unwrap();
        assert_eq!(response.status(), 400);
        let seen = up.seen();
        assert_eq!(seen.len(), 4, "no second try for another error");
        assert!(seen[3].body["tools"].is_array());
        assert!(proxy.log().contains("tools_as_text"), "{}", proxy.log());
    }
}

#[tokio::test]
async fn unreachable_upstream_is_a_502_and_nothing_configured_is_a_503() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let proxy =
        Proxy::start(&[("ATELIER_UPSTREAM_URL", format!("http://{dead}/v1")), ("ATELIER_UPSTREAM_KEY", KEY.into())]);
    let response =
        client().post(proxy.url("/api/chat")).json(&json!({"model": "m", "messages": []})).send().await.unwrap();
    assert_eq!(response.status(), 502);
    let text = response.text().await.unwrap();
    assert!(text.contains("upstream_unreachable") && !text.contains(KEY), "{text}");

    let proxy = Proxy::start(&[]);
    for path in ["/api/chat", "/v1/chat/completions"] {
        let response = client().post(proxy.url(path)).json(&json!({"messages": []})).send().await.unwrap();
        assert_eq!(response.status(), 503);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["type"], "upstream_not_configured");
        assert!(body["error"]["message"].as_str().unwrap().contains("ATELIER_UPSTREAM_URL"));
    }
    let health: serde_json::Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["configured"], false);
}

#[tokio::test]
async fn health_shows_configuration_but_never_a_key() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(
        &up,
        &[
            ("ATELIER_SEARCH_URL", format!("http://{}/search", up.addr)),
            ("ATELIER_SEARCH_KEY", "tvly-SECRETKEY".into()),
        ],
    );
    let text = client().get(proxy.url("/api/health")).send().await.unwrap().text().await.unwrap();
    let health: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(health["chat"]["configured"], true);
    assert_eq!(health["chat"]["upstream"]["models"]["main"]["id"], "big-model");
    assert_eq!(health["search"]["configured"], true);
    assert!(!text.contains(KEY) && !text.contains("tvly-SECRETKEY"), "{text}");
}

#[tokio::test]
async fn client_token_is_required_when_set() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_CLIENT_TOKEN", "let-me-in".into())]);
    let body = json!({"model": "m", "messages": []});
    let no_token = client().post(proxy.url("/api/chat")).json(&body).send().await.unwrap();
    assert_eq!(no_token.status(), 401);
    let wrong = client().post(proxy.url("/api/chat")).bearer_auth("nope").json(&body).send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let right = client().post(proxy.url("/api/chat")).bearer_auth("let-me-in").json(&body).send().await.unwrap();
    assert_eq!(right.status(), 200);
    let health = client().get(proxy.url("/api/health")).send().await.unwrap();
    assert_eq!(health.status(), 200, "health stays open");
    assert_eq!(up.seen().len(), 1, "refused requests never reach the upstream");
}

#[tokio::test]
async fn cors_allows_only_configured_origins() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_ALLOWED_ORIGINS", "http://app.example".into())]);
    let preflight = |origin: &'static str| {
        client()
            .request(reqwest::Method::OPTIONS, proxy.url("/api/chat"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
    };
    let allowed = preflight("http://app.example").await.unwrap();
    assert_eq!(allowed.headers()["access-control-allow-origin"], "http://app.example");
    let other = preflight("http://evil.example").await.unwrap();
    assert_eq!(other.status(), 403, "a foreign preflight is refused");
    assert!(other.headers().get("access-control-allow-origin").is_none());

    let same_origin_only = with_upstream(&up, &[]);
    let response = client()
        .post(same_origin_only.url("/api/chat"))
        .header("origin", "http://app.example")
        .json(&json!({"model": "m", "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(response.headers().get("access-control-allow-origin").is_none());
    assert!(up.seen().is_empty(), "nothing from a foreign origin reaches the upstream");
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_RATE_LIMIT", "3".into())]);
    let body = json!({"model": "m", "messages": []});
    for _ in 0..3 {
        let ok = client().post(proxy.url("/api/chat")).json(&body).send().await.unwrap();
        assert_eq!(ok.status(), 200);
    }
    let limited = client().post(proxy.url("/api/chat")).json(&body).send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let wait: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&wait), "retry after {wait}s");
    assert_eq!(up.seen().len(), 3);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_BODY_LIMIT", "1024".into())]);
    let big = "x".repeat(4096);
    let response = client()
        .post(proxy.url("/api/chat"))
        .json(&json!({"messages": [{"role": "user", "content": big}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn logs_one_structured_line_per_request_without_bodies_or_keys() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    client()
        .post(proxy.url("/api/chat?api_key=QUERYSECRET"))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "BODYSECRET"}]}))
        .send()
        .await
        .unwrap();
    let log = proxy.log();
    let line = log.lines().find(|l| l.contains("\"path\":\"/api/chat\"")).expect("a request line");
    let entry: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(entry["method"], "POST");
    assert_eq!(entry["status"], 200);
    assert!(entry["ms"].as_f64().is_some() && entry["upstream_ms"].as_f64().is_some());
    for secret in [KEY, "QUERYSECRET", "BODYSECRET"] {
        assert!(!log.contains(secret), "{secret} in the log");
    }
}

#[tokio::test]
async fn web_search_maps_a_tavily_compatible_api() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(
        &up,
        &[("ATELIER_SEARCH_URL", format!("http://{}/search", up.addr)), ("ATELIER_SEARCH_KEY", "tvly-KEY".into())],
    );
    up.push(Reply::Json(
        200,
        json!({"query": "q", "results": [{"title": "Rust", "url": "https://www.rust-lang.org", "content": "A language", "score": 0.9}]}),
        vec![],
    ));
    let response = client()
        .post(proxy.url("/api/tools/web-search"))
        .json(&json!({"query": "rust wasm", "max_results": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"results": [{"title": "Rust", "url": "https://www.rust-lang.org", "content": "A language"}]})
    );
    let seen = &up.seen()[0];
    assert_eq!(seen.body["query"], "rust wasm");
    assert_eq!(seen.body["max_results"], 3);
    assert_eq!(seen.body["api_key"], "tvly-KEY");

    let unconfigured = with_upstream(&up, &[]);
    let response =
        client().post(unconfigured.url("/api/tools/web-search")).json(&json!({"query": "x"})).send().await.unwrap();
    assert_eq!(response.status(), 503);
}

#[tokio::test]
async fn open_url_returns_markdown_and_follows_checked_redirects() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_OPEN_URL_ALLOW", up.addr.to_string())]);
    up.push(Reply::Page(302, "text/html", String::new(), vec![("location", "/article".into())]));
    up.push(Reply::Page(
        200,
        "text/html; charset=utf-8",
        "<html><head><title>The Article</title><script>x()</script></head><body><nav>menu</nav><h1>Title</h1><p>Body text.</p></body></html>".into(),
        vec![],
    ));
    let response = client()
        .post(proxy.url("/api/tools/open-url"))
        .json(&json!({"url": format!("http://{}/start", up.addr)}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let page: serde_json::Value = response.json().await.unwrap();
    assert_eq!(page["title"], "The Article");
    assert_eq!(page["url"], format!("http://{}/article", up.addr));
    let md = page["markdown"].as_str().unwrap();
    assert!(md.contains("# Title") && md.contains("Body text.") && !md.contains("menu") && !md.contains("x()"), "{md}");
}

#[tokio::test]
async fn open_url_refuses_every_non_public_target_and_never_connects() {
    let up = FakeUpstream::start();
    let canary = Canary::start();
    let p = canary.port;
    let proxy = with_upstream(&up, &[("ATELIER_OPEN_URL_ALLOW", up.addr.to_string())]);
    let targets = [
        format!("http://127.0.0.1:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("http://0x7f.0.0.1:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://017700000001:{p}/"),
        format!("http://0:{p}/"),
        format!("http://0.0.0.0:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://[::ffff:7f00:1]:{p}/"),
        format!("http://[::]:{p}/"),
        format!("https://127.0.0.1:{p}/"),
        "file:///etc/passwd".to_string(),
        format!("ftp://127.0.0.1:{p}/"),
    ];
    for target in &targets {
        let response =
            client().post(proxy.url("/api/tools/open-url")).json(&json!({"url": target})).send().await.unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, 403, "{target}: {body}");
        assert_eq!(body["error"]["type"], "url_refused", "{target}");
    }
    // An allowed target that redirects to a refused one.
    up.push(Reply::Page(302, "text/html", String::new(), vec![("location", format!("http://127.0.0.1:{p}/internal"))]));
    up.push(Reply::Page(301, "text/html", String::new(), vec![("location", format!("http://2130706433:{p}/"))]));
    for _ in 0..2 {
        let response = client()
            .post(proxy.url("/api/tools/open-url"))
            .json(&json!({"url": format!("http://{}/redirect", up.addr)}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
    }
    // A redirect loop stops after 5 hops.
    for _ in 0..7 {
        up.push(Reply::Page(302, "text/html", String::new(), vec![("location", "/again".into())]));
    }
    let response = client()
        .post(proxy.url("/api/tools/open-url"))
        .json(&json!({"url": format!("http://{}/again", up.addr)}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(canary.hits(), 0, "the canary was contacted");
}

#[tokio::test]
async fn a_chat_request_looks_again_after_a_listing_failed() {
    // The demo's health poll runs while the model server is still down: the
    // failed listing is remembered a few seconds, but a chat request in that
    // time must look again, not answer "cannot reach" for a server that is back.
    let port = support::free_port();
    let proxy = Proxy::start(&[("ATELIER_UPSTREAM_URL", format!("http://127.0.0.1:{port}/v1"))]);
    let health: serde_json::Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["upstream"]["models"]["available"], json!([]), "{health}");
    let up = FakeUpstream::start_on(port);
    let response =
        client().post(proxy.url("/api/chat")).json(&json!({"model": "main", "messages": []})).send().await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    assert_eq!(up.seen()[0].body["model"], "m", "the alias resolved from the fresh listing");
}
