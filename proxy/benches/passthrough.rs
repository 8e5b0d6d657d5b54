//! Proxy overhead on loopback, side by side in one run (figures in
//! BENCHMARKS.md; run with `cargo xtask bench`):
//!
//! 1. time to first byte of a streamed answer, straight to the fake upstream
//!    and through the proxy, interleaved, p50/p90 over many requests;
//! 2. throughput of a large streamed answer, both ways;
//! 3. 500 concurrent streaming requests held open through the proxy, which
//!    must all complete with the full body;
//! 4. the Ollama path: time to first byte of a streamed answer straight to a
//!    fake Ollama's native `/api/chat` (NDJSON) and through the proxy, which
//!    fits `num_ctx` and translates the lines to OpenAI chunks as they pass.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::Json;
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::{json, Value};

/// Streams `chunks` SSE events of `chunk_bytes` each, `interval_ms` apart.
async fn stream(Json(body): Json<Value>) -> Response {
    let spec = &body["bench"];
    let chunks = spec["chunks"].as_u64().unwrap_or(10);
    let size = spec["chunk_bytes"].as_u64().unwrap_or(100) as usize;
    let interval = Duration::from_millis(spec["interval_ms"].as_u64().unwrap_or(0));
    let payload =
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n", "x".repeat(size));
    let events = futures_util::stream::iter(0..chunks).then(move |i| {
        let payload = payload.clone();
        async move {
            if i > 0 && !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            Ok::<_, std::io::Error>(Bytes::from(payload))
        }
    });
    let done = futures_util::stream::once(async { Ok(Bytes::from_static(b"data: [DONE]\n\n")) });
    Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(events.chain(done))).unwrap()
}

/// A fake Ollama: its listings, and a native chat that streams `chunks`
/// NDJSON lines (the bench spec rides in the request as for `stream`).
async fn ollama(request: axum::extract::Request) -> Response {
    let path = request.uri().path().to_owned();
    let bytes = axum::body::to_bytes(request.into_body(), usize::MAX).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let json = |v: Value| {
        Response::builder().header("content-type", "application/json").body(Body::from(v.to_string())).unwrap()
    };
    match path.as_str() {
        "/v1/models" => {
            json(json!({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "library"}]}))
        }
        "/api/tags" => json(
            json!({"models": [{"name": "m", "digest": "sha256:1", "details": {"family": "llama", "parameter_size": "8B"}}]}),
        ),
        "/api/show" => json(
            json!({"capabilities": ["completion", "tools"], "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}),
        ),
        "/api/ps" => json(json!({"models": []})),
        _ => {
            let chunks = body["bench"]["chunks"].as_u64().unwrap_or(5);
            let line = move |done: bool| {
                let l = json!({"model": "m", "created_at": "2026-12-02T00:00:00Z", "message": {"role": "assistant", "content": if done { "" } else { "xxxxxxxx" }},
                               "done": done, "prompt_eval_count": 10, "eval_count": chunks});
                Ok::<_, std::io::Error>(Bytes::from(format!("{l}\n")))
            };
            let lines = futures_util::stream::iter((0..chunks).map(move |_| line(false)).chain([line(true)]));
            Response::builder().header("content-type", "application/x-ndjson").body(Body::from_stream(lines)).unwrap()
        }
    }
}

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn first_byte(client: &reqwest::Client, url: &str, body: &Value) -> (f64, usize) {
    let started = Instant::now();
    let response = client.post(url).json(body).send().await.expect("request");
    let mut stream = response.bytes_stream();
    let first = stream.next().await.expect("a first chunk").expect("bytes");
    let ttfb = started.elapsed().as_secs_f64() * 1e3;
    let mut total = first.len();
    while let Some(chunk) = stream.next().await {
        total += chunk.expect("bytes").len();
    }
    (ttfb, total)
}

fn start_proxy(upstream: SocketAddr) -> (Proxy, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let proxy = Proxy(
        Command::new(env!("CARGO_BIN_EXE_atelier-proxy"))
            .env("ATELIER_BIND", format!("127.0.0.1:{port}"))
            .env("ATELIER_UPSTREAM_URL", format!("http://{upstream}/v1"))
            .env("ATELIER_RATE_LIMIT", "0")
            .env("ATELIER_AUTODETECT", "false")
            // A configured model: the proxy refuses names it cannot vouch for.
            .env("ATELIER_MODEL_MAIN", "m")
            .stderr(Stdio::null())
            .spawn()
            .expect("proxy binary"),
    );
    (proxy, port)
}

/// Time to first byte straight to `direct` and through `proxied`,
/// interleaved so drift hits both alike: the JSON line of figures.
async fn ttfb(client: &reqwest::Client, name: &str, direct: &str, proxied: &str, body: &Value) -> Value {
    for _ in 0..50 {
        first_byte(client, direct, body).await;
        first_byte(client, proxied, body).await;
    }
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..1000 {
        d.push(first_byte(client, direct, body).await.0);
        p.push(first_byte(client, proxied, body).await.0);
    }
    d.sort_by(f64::total_cmp);
    p.sort_by(f64::total_cmp);
    json!({"bench": name, "requests": d.len(),
        "direct_p50": percentile(&d, 0.5), "proxied_p50": percentile(&p, 0.5),
        "added_p50": percentile(&p, 0.5) - percentile(&d, 0.5),
        "direct_p90": percentile(&d, 0.9), "proxied_p90": percentile(&p, 0.9)})
}

#[tokio::main]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream: SocketAddr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(axum::routing::post(stream));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let (_proxy, port) = start_proxy(upstream);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let direct = format!("http://{upstream}/v1/chat/completions");
    let proxied = format!("http://127.0.0.1:{port}/api/chat");
    let client = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(1024).build().unwrap();

    // 1. Time to first byte.
    let small = json!({"model": "m", "stream": true, "messages": [], "bench": {"chunks": 5, "chunk_bytes": 64}});
    println!("{}", ttfb(&client, "ttfb_ms", &direct, &proxied, &small).await);

    // 2. Throughput of a 32 MB streamed answer.
    let big = json!({"model": "m", "stream": true, "messages": [], "bench": {"chunks": 512, "chunk_bytes": 65536}});
    let mut rates = Vec::new();
    for url in [&direct, &proxied, &direct, &proxied, &direct, &proxied] {
        let started = Instant::now();
        let (_, bytes) = first_byte(&client, url, &big).await;
        rates.push(bytes as f64 / started.elapsed().as_secs_f64() / 1e6);
    }
    let best = |offset: usize| rates.iter().skip(offset).step_by(2).cloned().fold(0.0, f64::max);
    println!(
        "{}",
        json!({"bench": "throughput_mb_s", "direct": best(0), "proxied": best(1), "ratio": best(1) / best(0)})
    );

    // 3. 500 concurrent streams held open ~1 s each through the proxy.
    let held = json!({"model": "m", "stream": true, "messages": [], "bench": {"chunks": 10, "chunk_bytes": 100, "interval_ms": 100}});
    let started = Instant::now();
    let tasks: Vec<_> = (0..500)
        .map(|_| {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            let (url, body) = (proxied.clone(), held.clone());
            tokio::spawn(async move {
                let response = client.post(&url).json(&body).send().await.map_err(|e| e.to_string())?;
                if !response.status().is_success() {
                    return Err(format!("status {}", response.status()));
                }
                let bytes = response.bytes().await.map_err(|e| e.to_string())?;
                if bytes.ends_with(b"data: [DONE]\n\n") {
                    Ok(bytes.len())
                } else {
                    Err("truncated".to_owned())
                }
            })
        })
        .collect();
    let mut errors = Vec::new();
    for task in tasks {
        if let Err(e) = task.await.unwrap() {
            errors.push(e);
        }
    }
    println!(
        "{}",
        json!({"bench": "concurrent_streams", "streams": 500, "errors": errors.len(), "first_error": errors.first(),
            "wall_s": started.elapsed().as_secs_f64()})
    );

    // 4. The Ollama path: native chat straight, and translated through the proxy.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fake_ollama: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().fallback(ollama)).await.unwrap() });
    let (_ollama_proxy, port) = start_proxy(fake_ollama);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let native = format!("http://{fake_ollama}/api/chat");
    let proxied = format!("http://127.0.0.1:{port}/api/chat");
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}], "bench": {"chunks": 5}});
    let first = client.post(&proxied).json(&body).send().await.unwrap().text().await.unwrap();
    assert!(first.contains("chat.completion.chunk") && first.ends_with("data: [DONE]\n\n"), "translated: {first}");
    println!("{}", ttfb(&client, "ollama_ttfb_ms", &native, &proxied, &body).await);
}
