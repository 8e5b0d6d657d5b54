//! The proxy under attack: hostile pages, other sites in the person's
//! browser, DNS rebinding, model abuse, key leaks. Every test runs the real
//! binary against fakes on 127.0.0.1.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{client, error_of, with_upstream, FakeUpstream, Proxy, Reply, KEY};

fn chat_body() -> Value {
    json!({"model": "main", "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn a_cross_site_simple_request_never_reaches_the_upstream() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    // What a form or `fetch(…, {mode: "no-cors"})` on another site sends.
    let simple = client()
        .post(proxy.url("/api/chat"))
        .header("content-type", "text/plain")
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .body(chat_body().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(simple).await, (403, "origin_not_allowed".into()));
    // Without an Origin (old browsers, some redirects), the content type still stops it.
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let response = client()
            .post(proxy.url("/v1/chat/completions"))
            .header("content-type", content_type)
            .body(chat_body().to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(error_of(response).await, (415, "unsupported_media_type".into()), "{content_type}");
    }
    let bare = client().post(proxy.url("/api/chat")).body(chat_body().to_string()).send().await.unwrap();
    assert_eq!(bare.status(), 415);
    assert!(up.seen().is_empty(), "nothing was forwarded");
}

#[tokio::test]
async fn foreign_origins_are_refused_and_the_app_itself_is_served() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    for path in ["/api/chat", "/v1/chat/completions", "/api/tools/open-url", "/api/tools/web-search"] {
        let response =
            client().post(proxy.url(path)).header("origin", "https://evil.example").json(&chat_body()).send().await;
        assert_eq!(error_of(response.unwrap()).await, (403, "origin_not_allowed".into()), "{path}");
    }
    let preflight = client()
        .request(reqwest::Method::OPTIONS, proxy.url("/api/chat"))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 403);
    assert!(preflight.headers().get("access-control-allow-origin").is_none());
    let health = client().get(proxy.url("/api/health")).header("origin", "https://evil.example").send().await.unwrap();
    assert_eq!(health.status(), 403, "another site cannot read the configuration either");
    assert!(up.seen().is_empty());

    // The app's own requests: same origin, JSON.
    let own = format!("http://{}", proxy.addr);
    let response = client()
        .post(proxy.url("/api/chat"))
        .header("origin", own.as_str())
        .header("sec-fetch-site", "same-origin")
        .json(&chat_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let localhost = format!("http://localhost:{}", proxy.addr.port());
    let response = client()
        .post(format!("{localhost}/api/chat"))
        .header("origin", localhost.as_str())
        .json(&chat_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "the app opened as localhost works too");
    assert_eq!(up.seen().len(), 2);
}

#[tokio::test]
async fn a_dns_rebinding_host_is_refused_everywhere() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    let port = proxy.addr.port();
    let rebound = format!("rebind.attacker.example:{port}");
    for path in ["/api/health", "/", "/index.html"] {
        let response = client().get(proxy.url(path)).header("host", rebound.as_str()).send().await.unwrap();
        assert_eq!(error_of(response).await, (421, "host_not_allowed".into()), "{path}");
    }
    // Same-origin for the rebound page: its Origin matches its Host; still refused.
    let response = client()
        .post(proxy.url("/api/chat"))
        .header("host", rebound.as_str())
        .header("origin", format!("http://{rebound}"))
        .json(&chat_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 421);
    assert!(up.seen().is_empty());

    // A host the person configured (a reverse proxy's domain) is served.
    let behind = with_upstream(&up, &[("ATELIER_ALLOWED_HOSTS", "app.example.com".into())]);
    let response = client()
        .get(behind.url("/api/health"))
        .header("host", "app.example.com")
        .header("origin", "https://app.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn failed_token_checks_count_against_the_rate_limit() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_CLIENT_TOKEN", "let-me-in".into()), ("ATELIER_RATE_LIMIT", "3".into())]);
    for _ in 0..3 {
        let wrong = client().post(proxy.url("/api/chat")).bearer_auth("guess").json(&chat_body()).send().await;
        assert_eq!(wrong.unwrap().status(), 401);
    }
    let limited = client().post(proxy.url("/api/chat")).bearer_auth("guess-again").json(&chat_body()).send().await;
    assert_eq!(limited.unwrap().status(), 429, "guessing is rate limited");
    let right = client().post(proxy.url("/api/chat")).bearer_auth("let-me-in").json(&chat_body()).send().await;
    assert_eq!(right.unwrap().status(), 429, "the bucket is shared: even the right token waits");
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn only_configured_or_listed_models_are_forwarded() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    let ask = |model: &'static str| {
        client().post(proxy.url("/api/chat")).json(&json!({"model": model, "messages": [], "n": 1})).send()
    };
    assert_eq!(error_of(ask("gpt-5-pro-max").await.unwrap()).await, (400, "model_not_allowed".into()));
    assert!(up.seen().is_empty(), "an unknown model is refused before anything is forwarded");
    assert_eq!(ask("m").await.unwrap().status(), 200, "a model the upstream lists");
    assert_eq!(ask("small-model").await.unwrap().status(), 200, "a configured model");
    let forwarded: Vec<Value> = up.seen().iter().map(|s| s.body["model"].clone()).collect();
    assert_eq!(forwarded, [json!("m"), json!("small-model")]);
    let lists = up.models_seen().len();
    ask("gpt-5-pro-max").await.unwrap();
    assert_eq!(up.models_seen().len(), lists, "the model list is cached");

    // No model configured: the aliases resolve to a listed chat model, never to an embedding model.
    let up = FakeUpstream::start();
    up.set_models(200, json!({"object": "list", "data": [{"id": "nomic-embed-text"}, {"id": "qwen3:8b"}]}));
    let bare = Proxy::start(&[("ATELIER_UPSTREAM_URL", up.base())]);
    for alias in ["main", "sub"] {
        let response =
            client().post(bare.url("/api/chat")).json(&json!({"model": alias, "messages": []})).send().await.unwrap();
        assert_eq!(response.status(), 200, "{alias}");
    }
    let forwarded: Vec<Value> = up.seen().iter().map(|s| s.body["model"].clone()).collect();
    assert_eq!(forwarded, [json!("qwen3:8b"), json!("qwen3:8b")]);

    // An upstream without a list: aliases cannot be resolved and are never forwarded as they are.
    let up = FakeUpstream::start();
    up.set_models(404, json!({"error": "no such route"}));
    let bare = Proxy::start(&[("ATELIER_UPSTREAM_URL", up.base())]);
    let response = client().post(bare.url("/api/chat")).json(&chat_body()).send().await.unwrap();
    assert_eq!(error_of(response).await, (400, "model_not_allowed".into()));
    assert!(up.seen().is_empty());

    // The opt-out forwards any name.
    let up = FakeUpstream::start();
    let open = with_upstream(&up, &[("ATELIER_ALLOW_ANY_MODEL", "true".into())]);
    let response =
        client().post(open.url("/api/chat")).json(&json!({"model": "anything", "messages": []})).send().await;
    assert_eq!(response.unwrap().status(), 200);
    assert_eq!(up.seen()[0].body["model"], "anything");
}

#[tokio::test]
async fn an_autodetected_server_never_receives_the_key() {
    let local = FakeUpstream::start();
    let proxy = Proxy::start(&[
        ("ATELIER_AUTODETECT", "true".into()),
        ("ATELIER_LOCAL_PORTS", local.addr.port().to_string()),
        ("ATELIER_UPSTREAM_KEY", KEY.into()),
    ]);
    let health: Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["configured"], true, "{health}");
    let response = client().post(proxy.url("/api/chat")).json(&chat_body()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let all: Vec<_> = local.models_seen().into_iter().chain(local.seen()).collect();
    assert!(all.len() >= 2, "probe and chat reached the local server");
    for seen in all {
        assert!(seen.headers.get("authorization").is_none(), "{} carried a key", seen.path);
    }
}

#[tokio::test]
async fn a_probe_counts_only_when_the_answer_is_a_model_list() {
    let impostor = FakeUpstream::start();
    impostor.set_models(200, json!({"status": "ok", "hello": "I answer 200 to everything"}));
    let proxy = Proxy::start(&[
        ("ATELIER_AUTODETECT", "true".into()),
        ("ATELIER_LOCAL_PORTS", impostor.addr.port().to_string()),
    ]);
    let health: Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["configured"], false, "{health}");
    let response = client().post(proxy.url("/api/chat")).json(&chat_body()).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert!(impostor.seen().is_empty());
}

#[tokio::test]
async fn search_redirects_are_not_followed_and_answers_are_capped() {
    let search = FakeUpstream::start();
    let elsewhere = FakeUpstream::start();
    let proxy = with_upstream(
        &search,
        &[("ATELIER_SEARCH_URL", format!("http://{}/search", search.addr)), ("ATELIER_SEARCH_KEY", "tvly-KEY".into())],
    );
    for status in [307, 308, 302] {
        let location = format!("http://{}/steal", elsewhere.addr);
        search.push(Reply::Page(status, "application/json", "{}".into(), vec![("location", location)]));
        let response =
            client().post(proxy.url("/api/tools/web-search")).json(&json!({"query": "q"})).send().await.unwrap();
        assert_eq!(error_of(response).await, (502, "search_error".into()), "{status}");
    }
    assert!(elsewhere.seen().is_empty(), "the key went nowhere else");

    let huge = json!({"results": [{"title": "t", "url": "https://x", "content": "x".repeat(3 * 1024 * 1024)}]});
    search.push(Reply::Json(200, huge, vec![]));
    let response = client().post(proxy.url("/api/tools/web-search")).json(&json!({"query": "q"})).send().await.unwrap();
    assert_eq!(error_of(response).await, (502, "search_error".into()));
}

fn nested(depth: usize, inner: &str) -> String {
    format!("<html><body>{}{inner}{}</body></html>", "<div>".repeat(depth), "</div>".repeat(depth))
}

async fn open(proxy: &Proxy, up: &FakeUpstream, content_type: &'static str, body: String) -> (u16, Value) {
    up.push(Reply::Page(200, content_type, body, vec![]));
    let response = client()
        .post(proxy.url("/api/tools/open-url"))
        .json(&json!({"url": format!("http://{}/page", up.addr)}))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn no_page_brings_the_proxy_down() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_OPEN_URL_ALLOW", up.addr.to_string())]);
    let binary: Vec<u8> = (0..1_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let pages: Vec<(&str, &'static str, String)> = vec![
        ("20k nested", "text/html", nested(20_000, "needle-20k")),
        ("100k nested", "text/html", nested(100_000, "needle-100k")),
        ("600k nested, unclosed", "text/html", format!("{}needle-600k", "<div>".repeat(600_000))),
        ("3 MiB of one text node", "text/html", "lorem ipsum ".repeat(262_144)),
        ("malformed", "text/html", "<html<<body><p<a href='x>\"<table><td></tr></p><!--<script>".repeat(2_000)),
        ("binary as html", "text/html", String::from_utf8_lossy(&binary).into_owned()),
    ];
    for (name, content_type, body) in pages {
        let (status, page) = open(&proxy, &up, content_type, body).await;
        assert_eq!(status, 200, "{name}: {page}");
        let markdown = page["markdown"].as_str().unwrap_or_default();
        if let Some(needle) = name.split_whitespace().next().filter(|_| name.contains("nested")) {
            assert!(markdown.contains(&format!("needle-{needle}")), "{name}: the deep text is kept");
        }
        let health = client().get(proxy.url("/api/health")).send().await.unwrap();
        assert_eq!(health.status(), 200, "the proxy is alive after {name}");
    }
    let (_, page) = open(&proxy, &up, "text/html", "word ".repeat(600_000)).await;
    assert_eq!(page["truncated"], true);
    assert!(page["markdown"].as_str().unwrap().ends_with("more characters not shown]"));
}

#[tokio::test]
async fn other_requests_are_served_while_a_page_converts() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_OPEN_URL_ALLOW", up.addr.to_string())]);
    up.push(Reply::Page(200, "text/html", format!("{}x", "<span><b>".repeat(300_000)), vec![]));
    let url = proxy.url("/api/tools/open-url");
    let target = format!("http://{}/page", up.addr);
    let slow = tokio::spawn(async move { client().post(url).json(&json!({ "url": target })).send().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    for _ in 0..5 {
        let health = client().get(proxy.url("/api/health")).timeout(Duration::from_secs(5)).send().await.unwrap();
        assert_eq!(health.status(), 200);
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(slow.await.unwrap().unwrap().status(), 200);
}

#[tokio::test]
async fn a_page_over_its_time_budget_is_a_coded_error() {
    let up = FakeUpstream::start();
    let proxy =
        with_upstream(&up, &[("ATELIER_OPEN_URL_ALLOW", up.addr.to_string()), ("ATELIER_PAGE_TIMEOUT_MS", "1".into())]);
    // No 3 MB page converts in a millisecond.
    let (status, body) = open(&proxy, &up, "text/html", "<p><a href=x><b>w</b></a></p>".repeat(100_000)).await;
    assert_eq!((status, body["error"]["type"].as_str()), (422, Some("page_too_complex")), "{body}");
    assert_eq!(client().get(proxy.url("/api/health")).send().await.unwrap().status(), 200);
}
