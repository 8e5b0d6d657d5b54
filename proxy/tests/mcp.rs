//! The MCP relay (`/api/mcp/<name>`) of the real proxy binary against
//! scripted servers on 127.0.0.1 that record every request they get: which
//! headers cross in each direction, the gate in front of it, where a
//! request can go (only the configured URL), secrets in answers, streams,
//! health. The official MCP client and the reference server are driven
//! through the relay by `tests/mcp/relay.test.mjs`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use support::{client, error_of, free_port, FakeUpstream, Proxy, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

const SERVER_TOKEN: &str = "mcp-SERVER-token-0123456789";
const CLIENT_TOKEN: &str = "client-token-for-the-proxy";
const URL_PASSWORD: &str = "url-PASSWORD-99";
const QUERY_KEY: &str = "QUERY-KEY-77";
const SECRETS: [&str; 3] = [SERVER_TOKEN, URL_PASSWORD, QUERY_KEY];

/// The proxy relaying `notes` to `up` (with its token) behind a client
/// token, plus `extra` settings.
fn relay_to(up: &FakeUpstream, extra: &[(&str, String)]) -> Proxy {
    let mut env = vec![
        ("ATELIER_MCP_SERVERS", format!("notes=http://{}/mcp", up.addr)),
        ("ATELIER_MCP_TOKEN_NOTES", SERVER_TOKEN.to_owned()),
        ("ATELIER_CLIENT_TOKEN", CLIENT_TOKEN.to_owned()),
    ];
    env.extend(extra.iter().cloned());
    Proxy::start(&env)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

/// A request to the relay as the person's app sends it.
fn to_relay(proxy: &Proxy, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    client().request(method, proxy.url(path)).bearer_auth(CLIENT_TOKEN)
}

fn post(proxy: &Proxy, path: &str) -> reqwest::RequestBuilder {
    to_relay(proxy, reqwest::Method::POST, path)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
}

#[tokio::test]
async fn the_transport_headers_cross_both_ways_and_nothing_else() {
    let up = FakeUpstream::start();
    let proxy = relay_to(&up, &[]);
    let result = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}}});
    up.push(Reply::Json(
        200,
        result.clone(),
        vec![
            ("mcp-session-id", "session-1"),
            ("mcp-protocol-version", "2025-11-25"),
            ("set-cookie", "sid=server-cookie; HttpOnly"),
            ("www-authenticate", "Bearer resource_metadata=\"http://elsewhere/\""),
            ("x-powered-by", "Express"),
        ],
    ));
    let response = post(&proxy, "/api/mcp/notes")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-method", "initialize")
        .header("mcp-param-region", "us-west1")
        .header("cookie", "browser=cookie")
        .header("origin", format!("http://{}", proxy.addr))
        .header("referer", format!("http://{}/app", proxy.addr))
        .header("x-custom", "from the page")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["mcp-session-id"], "session-1");
    assert_eq!(headers["mcp-protocol-version"], "2025-11-25");
    for dropped in ["set-cookie", "www-authenticate", "x-powered-by"] {
        assert!(headers.get(dropped).is_none(), "{dropped} reached the browser");
    }
    assert_eq!(response.json::<Value>().await.unwrap(), result);

    let seen = up.seen();
    let first = &seen[0];
    assert_eq!((first.method.as_str(), first.path.as_str()), ("POST", "/mcp"));
    assert_eq!(first.body, initialize());
    let header = |name: &str| first.headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(header("authorization"), Some(format!("Bearer {SERVER_TOKEN}")), "the server's token, not the client's");
    assert_eq!(header("accept").as_deref(), Some("application/json, text/event-stream"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(header("mcp-protocol-version").as_deref(), Some("2025-11-25"));
    assert_eq!(header("mcp-method").as_deref(), Some("initialize"));
    assert_eq!(header("mcp-param-region").as_deref(), Some("us-west1"));
    for kept in ["cookie", "origin", "referer", "x-custom"] {
        assert!(header(kept).is_none(), "{kept} reached the MCP server");
    }

    // The standalone stream (GET) and the end of the session (DELETE).
    let opened = Arc::new(Notify::new());
    opened.notify_one();
    up.push(Reply::Sse {
        first: b"id: ev-8\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n".to_vec(),
        rest: Vec::new(),
        gate: opened,
    });
    let stream = to_relay(&proxy, reqwest::Method::GET, "/api/mcp/notes")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", "session-1")
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", "ev-7")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    assert!(stream.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_eq!(stream.headers()["cache-control"], "no-cache");
    assert!(stream.text().await.unwrap().contains("list_changed"));
    up.push(Reply::Json(200, json!({}), vec![]));
    let ended = to_relay(&proxy, reqwest::Method::DELETE, "/api/mcp/notes")
        .header("mcp-session-id", "session-1")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    let seen = up.seen();
    let (get, delete) = (&seen[1], &seen[2]);
    assert_eq!((get.method.as_str(), delete.method.as_str()), ("GET", "DELETE"));
    assert_eq!(get.headers["last-event-id"], "ev-7");
    for request in [get, delete] {
        assert_eq!(request.headers["mcp-session-id"], "session-1");
        assert_eq!(request.headers["authorization"], format!("Bearer {SERVER_TOKEN}"));
    }
}

#[tokio::test]
async fn an_app_on_another_allowed_origin_can_use_the_relay() {
    let up = FakeUpstream::start();
    let app = "http://app.example:5173";
    let proxy = relay_to(&up, &[("ATELIER_ALLOWED_ORIGINS", app.into())]);
    for method in ["POST", "GET", "DELETE"] {
        let preflight = client()
            .request(reqwest::Method::OPTIONS, proxy.url("/api/mcp/notes"))
            .header("origin", app)
            .header("access-control-request-method", method)
            .header(
                "access-control-request-headers",
                "authorization, content-type, mcp-session-id, mcp-protocol-version, mcp-param-region, last-event-id",
            )
            .send()
            .await
            .unwrap();
        assert_eq!(preflight.status(), 200, "{method}");
        let allowed = |name: &str| preflight.headers()[name].to_str().unwrap().to_ascii_lowercase();
        assert!(allowed("access-control-allow-methods").contains(&method.to_ascii_lowercase()), "{method}");
        assert!(allowed("access-control-allow-headers").contains("mcp-param-region"));
    }
    up.push(Reply::Json(200, json!({"jsonrpc": "2.0", "id": 1, "result": {}}), vec![("mcp-session-id", "session-9")]));
    let response = post(&proxy, "/api/mcp/notes").header("origin", app).json(&initialize()).send().await.unwrap();
    let exposed = response.headers()["access-control-expose-headers"].to_str().unwrap().to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id") && exposed.contains("mcp-protocol-version"), "{exposed}");
    assert_eq!(response.headers()["mcp-session-id"], "session-9");
    assert!(up.seen()[0].headers.get("origin").is_none());
}

/// Sends `raw` as it is (no client normalises its path) and returns the status.
async fn raw_status(proxy: &Proxy, raw: &str) -> u16 {
    let mut socket = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    socket.write_all(raw.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn nothing_the_browser_sends_reaches_another_url_or_passes_the_gate() {
    let up = FakeUpstream::start();
    let proxy = relay_to(&up, &[]);
    for path in [
        "/api/mcp/other",
        "/api/mcp/NOTES",
        "/api/mcp/%6Eotes",
        "/api/mcp/notes/",
        "/api/mcp/notes/extra",
        "/api/mcp/notes%2F..%2Fadmin",
        "/api/mcp/..%2Fnotes",
        "/api/mcp/notes%00",
    ] {
        let response = post(&proxy, path).json(&initialize()).send().await.unwrap();
        assert_eq!(error_of(response).await, (404, "mcp_server_not_found".into()), "{path}");
    }
    for raw_path in ["/api/mcp/notes/../../v1/chat/completions", "/api/mcp/notes/..", "/api/mcp/./notes/x"] {
        let request = format!(
            "GET {raw_path} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {CLIENT_TOKEN}\r\nconnection: close\r\n\r\n",
            proxy.addr
        );
        assert_eq!(raw_status(&proxy, &request).await, 404, "{raw_path}");
    }
    for query in ["?url=http://127.0.0.1:1/", "?", "?x=1"] {
        let response = post(&proxy, &format!("/api/mcp/notes{query}")).json(&initialize()).send().await.unwrap();
        assert_eq!(error_of(response).await, (400, "invalid_request".into()), "{query}");
    }
    let foreign = post(&proxy, "/api/mcp/notes").header("origin", "https://evil.example").json(&initialize()).send();
    assert_eq!(error_of(foreign.await.unwrap()).await, (403, "origin_not_allowed".into()));
    let rebound = post(&proxy, "/api/mcp/notes")
        .header("host", format!("rebind.attacker.example:{}", proxy.addr.port()))
        .json(&initialize())
        .send();
    assert_eq!(error_of(rebound.await.unwrap()).await, (421, "host_not_allowed".into()));
    let plain = to_relay(&proxy, reqwest::Method::POST, "/api/mcp/notes")
        .header("content-type", "text/plain")
        .body(initialize().to_string())
        .send();
    assert_eq!(error_of(plain.await.unwrap()).await, (415, "unsupported_media_type".into()));
    for token in [None, Some("wrong"), Some(SERVER_TOKEN)] {
        let mut request = client().post(proxy.url("/api/mcp/notes")).json(&initialize());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        assert_eq!(error_of(request.send().await.unwrap()).await, (401, "unauthorized".into()), "{token:?}");
        let stream = client().get(proxy.url("/api/mcp/notes")).header("accept", "text/event-stream").send();
        assert_eq!(stream.await.unwrap().status(), 401);
    }
    let put = to_relay(&proxy, reqwest::Method::PUT, "/api/mcp/notes").json(&initialize()).send();
    assert_eq!(put.await.unwrap().status(), 405);
    assert!(up.seen().is_empty(), "no probe reached the MCP server: {:?}", up.seen());

    // Over the body limit: refused as chat refuses it.
    let small = relay_to(&up, &[("ATELIER_BODY_LIMIT", "1024".into())]);
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": {"text": "x".repeat(4096)}}});
    assert_eq!(post(&small, "/api/mcp/notes").json(&big).send().await.unwrap().status(), 413);
    assert!(up.seen().is_empty());
}

fn assert_clean(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} carries {secret}: {text}");
    }
}

async fn clean_text(what: &str, response: reqwest::Response) -> String {
    let headers = format!("{:?}", response.headers());
    assert_clean(what, &headers);
    let body = response.text().await.unwrap();
    assert_clean(what, &body);
    body
}

#[tokio::test]
async fn the_servers_secrets_never_reach_the_browser_or_the_log() {
    let up = FakeUpstream::start();
    let gone = free_port();
    let servers = format!(
        "notes=http://{0}/mcp,kb=http://reader:{URL_PASSWORD}@{0}/kb?key={QUERY_KEY},gone=http://u:{URL_PASSWORD}@127.0.0.1:{gone}/mcp?key={QUERY_KEY}",
        up.addr
    );
    let proxy = relay_to(&up, &[("ATELIER_MCP_SERVERS", servers)]);
    let echo = format!("I got Bearer {SERVER_TOKEN}, {URL_PASSWORD} and {QUERY_KEY}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}});

    // A server that echoes what it got, in a JSON answer and in an error.
    for (server, status) in [("notes", 200), ("kb", 200), ("notes", 500), ("kb", 400)] {
        up.push(Reply::Json(
            status,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": echo}]}}),
            vec![],
        ));
        let response = post(&proxy, &format!("/api/mcp/{server}")).json(&call).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status);
        let body = clean_text(server, response).await;
        assert!(body.contains("I got Bearer [redacted], [redacted] and [redacted]"), "{body}");
    }
    let seen = up.seen();
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {SERVER_TOKEN}"));
    assert!(
        seen[1].headers["authorization"].to_str().unwrap().starts_with("Basic "),
        "the URL's credentials as basic auth"
    );
    assert_eq!(seen[1].path, "/kb");

    // In an event stream, a secret split across chunks.
    let (head, tail) = SERVER_TOKEN.split_at(9);
    let release = Arc::new(Notify::new());
    up.push(Reply::Sse {
        first: format!("data: {{\"token\":\"{head}").into_bytes(),
        rest: format!("{tail}\"}}\n\n").into_bytes(),
        gate: release.clone(),
    });
    let response = post(&proxy, "/api/mcp/notes").json(&call).send().await.unwrap();
    let mut stream = response.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("bytes before the rest");
    assert_eq!(&first.unwrap().unwrap()[..], b"data: {\"token\":\"", "only a possible start of the secret waits");
    release.notify_one();
    let mut rest = Vec::new();
    while let Some(chunk) = stream.next().await {
        rest.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(String::from_utf8(rest).unwrap(), "[redacted]\"}\n\n");

    // A server that refuses the token, or cannot be reached: the proxy's own errors.
    up.push(Reply::Json(401, json!({"error": echo}), vec![("www-authenticate", "Bearer realm=\"x\"")]));
    let refused = post(&proxy, "/api/mcp/notes").json(&call).send().await.unwrap();
    assert!(refused.headers().get("www-authenticate").is_none());
    let body: Value = serde_json::from_str(&clean_text("401", refused).await).unwrap();
    assert_eq!(
        (body["error"]["type"].as_str(), body["error"]["upstream_status"].as_u64()),
        (Some("mcp_auth"), Some(401))
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("ATELIER_MCP_TOKEN_NOTES"));
    let unreachable = post(&proxy, "/api/mcp/gone").json(&call).send().await.unwrap();
    assert_eq!(unreachable.status(), 502);
    let body = clean_text("unreachable", unreachable).await;
    assert!(body.contains("mcp_unreachable") && !body.contains(&gone.to_string()), "{body}");

    let health =
        clean_text("health", client().get(proxy.url("/api/health")).bearer_auth(CLIENT_TOKEN).send().await.unwrap())
            .await;
    assert!(!health.contains("reader") && !health.contains("127.0.0.1"), "no URL in health: {health}");
    let log = proxy.log();
    assert_clean("the log", &log);
    assert!(log.contains("MCP server kb at http://127.0.0.1:") && log.contains("/api/mcp/kb"), "{log}");
}

#[tokio::test]
async fn redirects_are_never_followed() {
    let up = FakeUpstream::start();
    let elsewhere = FakeUpstream::start();
    let proxy = relay_to(&up, &[]);
    for status in [307, 308, 302, 301] {
        let location = format!("http://{}/steal", elsewhere.addr);
        up.push(Reply::Page(status, "application/json", "{}".into(), vec![("location", location)]));
        let response = post(&proxy, "/api/mcp/notes").json(&initialize()).send().await.unwrap();
        assert!(response.headers().get("location").is_none());
        assert_eq!(error_of(response).await, (502, "mcp_redirect".into()), "{status}");
    }
    assert!(elsewhere.seen().is_empty(), "the token went nowhere else");
}

/// Reads `stream` to its end: the chunks and when each came.
async fn read_all(response: reqwest::Response, within: Duration) -> Vec<(Instant, String)> {
    let mut stream = response.bytes_stream();
    let mut chunks = Vec::new();
    let deadline = Instant::now() + within;
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline.into(), stream.next()).await {
        chunks.push((Instant::now(), String::from_utf8(chunk.unwrap().to_vec()).unwrap()));
    }
    assert!(Instant::now() < deadline, "the stream did not end within {within:?}: {chunks:?}");
    chunks
}

#[tokio::test]
async fn event_streams_are_unbuffered_kept_alive_and_ended_when_the_server_is_silent() {
    let up = FakeUpstream::start();
    let proxy = relay_to(&up, &[("ATELIER_MCP_STREAM_IDLE", "2".into())]);
    // A POST answered with a stream: the first event arrives while the server holds the rest.
    let first = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n".to_vec();
    let rest = b"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r\n\r\n".to_vec();
    let release = Arc::new(Notify::new());
    up.push(Reply::Sse { first: first.clone(), rest: rest.clone(), gate: release.clone() });
    let response = post(&proxy, "/api/mcp/notes").json(&initialize()).send().await.unwrap();
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    while received.len() < first.len() {
        let chunk =
            tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("the first event arrives first");
        received.extend_from_slice(&chunk.unwrap().unwrap());
    }
    release.notify_one();
    while let Some(chunk) = stream.next().await {
        received.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(received, [first, rest].concat(), "byte for byte");

    // The standalone stream of a server that then says nothing: keepalive
    // comments, then a clean end after the idle limit (2 s here).
    up.push(Reply::Sse { first: b"id: 1\ndata: {}\n\n".to_vec(), rest: Vec::new(), gate: Arc::new(Notify::new()) });
    let opened = Instant::now();
    let response = to_relay(&proxy, reqwest::Method::GET, "/api/mcp/notes")
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let chunks = read_all(response, Duration::from_secs(10)).await;
    let text: String = chunks.iter().map(|(_, c)| c.as_str()).collect();
    assert!(text.starts_with("id: 1\ndata: {}\n\n"), "{text:?}");
    let keepalives = text.matches(": keepalive\n").count();
    assert!(keepalives >= 2, "{text:?}");
    assert_eq!(text.replace(": keepalive\n", ""), "id: 1\ndata: {}\n\n");
    let ended = chunks.last().unwrap().0.duration_since(opened);
    assert!(ended >= Duration::from_millis(1300), "ended after {ended:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(up.disconnects(), 1, "the relay let go of the server's stream");

    // Mid-line, no comment is written (it would change the event).
    up.push(Reply::Sse { first: b"data: part".to_vec(), rest: Vec::new(), gate: Arc::new(Notify::new()) });
    let response = to_relay(&proxy, reqwest::Method::GET, "/api/mcp/notes")
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let text: String = read_all(response, Duration::from_secs(10)).await.into_iter().map(|(_, c)| c).collect();
    assert_eq!(text, "data: part");
}

#[tokio::test]
async fn a_notification_stream_may_stay_quiet_longer_than_an_answer() {
    let up = FakeUpstream::start();
    let proxy = relay_to(&up, &[("ATELIER_UPSTREAM_TIMEOUT", "1".into()), ("ATELIER_MCP_STREAM_IDLE", "3".into())]);
    let quiet = || Reply::Sse { first: b"data: {}\n\n".to_vec(), rest: Vec::new(), gate: Arc::new(Notify::new()) };
    for (method, at_least, at_most) in [("tools/call", 700, 2500), ("subscriptions/listen", 2700, 9000)] {
        up.push(quiet());
        let opened = Instant::now();
        let response =
            post(&proxy, "/api/mcp/notes").header("mcp-method", method).json(&initialize()).send().await.unwrap();
        read_all(response, Duration::from_secs(10)).await;
        let lasted = opened.elapsed();
        let range = Duration::from_millis(at_least)..Duration::from_millis(at_most);
        assert!(range.contains(&lasted), "{method}: the stream lasted {lasted:?}");
    }
}

#[tokio::test]
async fn health_lists_the_servers_and_probes_them_sparingly() {
    let up = FakeUpstream::start();
    let locked = FakeUpstream::start();
    let gone = free_port();
    let servers =
        format!("notes=http://{}/mcp,locked=http://{}/mcp,gone=http://127.0.0.1:{gone}/mcp", up.addr, locked.addr);
    let proxy = relay_to(&up, &[("ATELIER_MCP_SERVERS", servers)]);
    for _ in 0..3 {
        locked.push(Reply::Json(401, json!({}), vec![]));
    }
    let health = || async {
        let response = client().get(proxy.url("/api/health")).bearer_auth(CLIENT_TOKEN).send().await.unwrap();
        response.json::<Value>().await.unwrap()["mcp"].clone()
    };
    let expected = json!([
        {"name": "notes", "reachable": true},
        {"name": "locked", "reachable": false, "error": "unauthorized"},
        {"name": "gone", "reachable": false, "error": "unreachable"},
    ]);
    assert_eq!(health().await, expected);
    assert_eq!(health().await, expected, "the same answer, from the cache");
    let probes = up.seen();
    assert_eq!(probes.len(), 1, "one probe per server: {probes:?}");
    assert_eq!(
        (probes[0].method.as_str(), probes[0].headers["accept"].to_str().unwrap()),
        ("GET", "text/event-stream")
    );
    assert_eq!(probes[0].headers["authorization"], format!("Bearer {SERVER_TOKEN}"));
    assert!(probes[0].headers.get("mcp-session-id").is_none());
    assert_eq!(locked.seen().len(), 1);

    // Relayed traffic counts: a server just heard from is not probed.
    let up = FakeUpstream::start();
    let proxy = relay_to(&up, &[]);
    up.push(Reply::Json(200, json!({"jsonrpc": "2.0", "id": 1, "result": {}}), vec![]));
    post(&proxy, "/api/mcp/notes").json(&initialize()).send().await.unwrap();
    let response = client().get(proxy.url("/api/health")).bearer_auth(CLIENT_TOKEN).send().await.unwrap();
    assert_eq!(response.json::<Value>().await.unwrap()["mcp"], json!([{"name": "notes", "reachable": true}]));
    assert_eq!(up.seen().len(), 1, "no probe after a relayed answer");
}

/// Runs the proxy with `env` and returns its exit code and stderr (it must exit).
fn refused_start(env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_atelier-proxy"));
    cmd.env_clear()
        .env("ATELIER_BIND", "127.0.0.1:0")
        .env("ATELIER_AUTODETECT", "false")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

#[test]
fn bad_mcp_settings_stop_the_proxy_with_a_message() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("Notes=http://127.0.0.1:1/mcp", &[], "MCP server name \"Notes\""),
        ("notes=ftp://127.0.0.1/mcp", &[], "only http and https"),
        ("notes=http://127.0.0.1:1/a,notes=http://127.0.0.1:1/b", &[], "configured twice"),
        ("notes", &[], "is not `name=url`"),
        ("notes=http://127.0.0.1:1/mcp", &["--mcp-token", "other=x"], "\"other\", which is not in ATELIER_MCP_SERVERS"),
        ("notes=http://127.0.0.1:1/mcp", &["--mcp-token", SERVER_TOKEN], "(27 characters)"),
    ];
    for (servers, args, message) in cases {
        let (status, stderr) = refused_start(&[("ATELIER_MCP_SERVERS", servers)], args);
        assert_eq!(status, Some(2), "{servers} {args:?}: {stderr}");
        assert!(stderr.contains(message), "{servers}: {stderr}");
        assert!(!stderr.contains(SERVER_TOKEN), "{stderr}");
    }
}

#[tokio::test]
async fn a_token_for_no_server_is_reported_at_start_without_its_value() {
    let up = FakeUpstream::start();
    let proxy = relay_to(&up, &[("ATELIER_MCP_TOKEN_NOTEZ", SERVER_TOKEN.into())]);
    let log = proxy.log();
    assert!(log.contains("ATELIER_MCP_TOKEN_NOTEZ is set, but ATELIER_MCP_SERVERS names no such server"), "{log}");
    assert!(log.contains("MCP server notes at http://") && log.contains("with its bearer token"), "{log}");
    assert_clean("the log", &log);
}
