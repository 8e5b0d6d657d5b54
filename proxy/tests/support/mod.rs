//! Test support: the real proxy binary on a free loopback port, a scripted
//! OpenAI-compatible (and Tavily-compatible) fake upstream, and a canary that
//! counts connections it should never get.
#![allow(dead_code)]

pub mod ollama;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use tokio::sync::Notify;

/// What the fake upstream answers to the next request.
pub enum Reply {
    /// A status, a JSON body and extra headers.
    Json(u16, serde_json::Value, Vec<(&'static str, &'static str)>),
    /// An SSE answer: `first` is sent at once; `rest` after `gate` is notified.
    Sse { first: Vec<u8>, rest: Vec<u8>, gate: Arc<Notify> },
    /// An HTML (or other) page with a content type.
    Page(u16, &'static str, String, Vec<(&'static str, String)>),
}

/// One request the fake upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

#[derive(Default)]
struct Fake {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    /// What `GET …/models` answers (None: the default list); such requests
    /// are recorded apart and never take a scripted reply.
    models: Mutex<Option<(u16, serde_json::Value)>>,
    /// What the servers' own listings answer (`/api/tags`, `/api/ps`, `/api/show`,
    /// `/props`, `/api/v0/models`, `/api/version`; absent: 404).
    routes: Mutex<std::collections::HashMap<String, serde_json::Value>>,
    models_seen: Mutex<Vec<Seen>>,
    /// Set when a streamed answer's body was dropped before it finished.
    disconnects: AtomicUsize,
}

/// The scripted fake upstream, served on 127.0.0.1 by a background runtime.
pub struct FakeUpstream {
    pub addr: SocketAddr,
    fake: Arc<Fake>,
    stop: Arc<Notify>,
    stopped: Arc<AtomicUsize>,
}

/// A loopback port that was free a moment ago (for a server started later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl FakeUpstream {
    pub fn start() -> FakeUpstream {
        FakeUpstream::serve(std::net::TcpListener::bind("127.0.0.1:0").unwrap())
    }

    /// Starts on `port` (e.g. one a proxy already probes).
    pub fn start_on(port: u16) -> FakeUpstream {
        FakeUpstream::serve(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap())
    }

    fn serve(listener: std::net::TcpListener) -> FakeUpstream {
        let fake = Arc::new(Fake::default());
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(answer).with_state(fake.clone());
        let stop = Arc::new(Notify::new());
        let stopped = Arc::new(AtomicUsize::new(0));
        let (stop_signal, stopped_flag) = (stop.clone(), stopped.clone());
        // Its own thread and runtime, so it outlives any test's runtime.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let serve = axum::serve(listener, app);
                tokio::select! {
                    _ = serve => {}
                    _ = stop_signal.notified() => {}
                }
            });
            // The runtime is dropped here: the listener and every connection close.
            drop(runtime);
            stopped_flag.store(1, Ordering::SeqCst);
        });
        FakeUpstream { addr, fake, stop, stopped }
    }

    /// Stops serving: the port refuses connections afterwards.
    pub fn stop(&self) {
        self.stop.notify_one();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.stopped.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sets what Ollama's `GET /api/tags` answers.
    pub fn set_tags(&self, body: serde_json::Value) {
        self.set_route("/api/tags", body);
    }

    /// Sets what a server's own listing at `path` answers (see [`LISTINGS`]).
    pub fn set_route(&self, path: &str, body: serde_json::Value) {
        self.fake.routes.lock().unwrap().insert(path.to_owned(), body);
    }

    pub fn base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn push(&self, reply: Reply) {
        self.fake.replies.lock().unwrap().push_back(reply);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.fake.seen.lock().unwrap().clone()
    }

    /// Sets what `GET …/models` answers.
    pub fn set_models(&self, status: u16, body: serde_json::Value) {
        *self.fake.models.lock().unwrap() = Some((status, body));
    }

    /// The `GET …/models` requests received.
    pub fn models_seen(&self) -> Vec<Seen> {
        self.fake.models_seen.lock().unwrap().clone()
    }

    pub fn disconnects(&self) -> usize {
        self.fake.disconnects.load(Ordering::SeqCst)
    }
}

/// Counts `Drop`s of an unfinished stream.
struct DropGuard(Arc<Fake>, bool);

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.disconnects.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The servers' own listings the proxy reads besides `/models` (answered
/// from [`FakeUpstream::set_route`], else 404; recorded with the model lists).
pub const LISTINGS: &[&str] = &["/api/tags", "/api/ps", "/api/show", "/api/version", "/props", "/api/v0/models"];

async fn answer(State(fake): State<Arc<Fake>>, request: Request) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let headers = request.headers().clone();
    let bytes = axum::body::to_bytes(request.into_body(), usize::MAX).await.unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    if LISTINGS.contains(&path.as_str()) {
        let listing = fake.routes.lock().unwrap().get(&path).cloned();
        fake.models_seen.lock().unwrap().push(Seen { method: method.clone(), path, headers, body });
        let (status, body) = listing.map_or((404, "{}".to_owned()), |l| (200, l.to_string()));
        return Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
    }
    if path.ends_with("/models") {
        fake.models_seen.lock().unwrap().push(Seen { method: method.clone(), path, headers, body });
        let (status, list) = fake.models.lock().unwrap().clone().unwrap_or_else(|| {
            let ids = ["m", "big-model", "small-model", "text-embedding-3-small"];
            (200, serde_json::json!({"object": "list", "data": ids.map(|id| serde_json::json!({"id": id, "object": "model"}))}))
        });
        return Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(list.to_string()))
            .unwrap();
    }
    let native = (path == "/api/chat").then(|| (body["model"].clone(), body["stream"].as_bool().unwrap_or(true)));
    fake.seen.lock().unwrap().push(Seen { method: method.clone(), path, headers, body });
    let reply = fake.replies.lock().unwrap().pop_front();
    match reply {
        // Ollama's native chat (what the proxy sends a found Ollama): one
        // JSON answer, or NDJSON lines when streamed.
        None if native.is_some() => {
            let (model, streamed) = native.unwrap();
            let done = serde_json::json!({"model": model, "created_at": "2026-12-02T00:00:00Z",
                "message": {"role": "assistant", "content": "default"}, "done": true, "done_reason": "stop",
                "prompt_eval_count": 1, "eval_count": 1});
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", if streamed { "application/x-ndjson" } else { "application/json" })
                .body(Body::from(format!("{done}\n")))
                .unwrap()
        }
        None => Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from(r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"default"},"finish_reason":"stop"}]}"#))
            .unwrap(),
        Some(Reply::Json(status, value, headers)) => {
            let mut builder = Response::builder().status(status).header("content-type", "application/json");
            for (k, v) in headers {
                builder = builder.header(k, v);
            }
            builder.body(Body::from(value.to_string())).unwrap()
        }
        Some(Reply::Page(status, content_type, body, headers)) => {
            let mut builder = Response::builder().status(status).header("content-type", content_type);
            for (k, v) in headers {
                builder = builder.header(k, v);
            }
            builder.body(Body::from(body)).unwrap()
        }
        Some(Reply::Sse { first, rest, gate }) => {
            let guard = DropGuard(fake.clone(), false);
            let stream = async_stream(first, rest, gate, guard);
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    }
}

fn async_stream(
    first: Vec<u8>,
    rest: Vec<u8>,
    gate: Arc<Notify>,
    guard: DropGuard,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(
        (0u8, Some(first), Some(rest), gate, guard),
        |(step, first, rest, gate, mut guard)| async move {
            match step {
                0 => Some((Ok(Bytes::from(first.unwrap())), (1, None, rest, gate, guard))),
                1 => {
                    gate.notified().await;
                    guard.1 = true;
                    Some((Ok(Bytes::from(rest.unwrap())), (2, None, None, gate, guard)))
                }
                _ => None,
            }
        },
    )
}

/// The real atelier-proxy binary, its stderr collected for log checks.
pub struct Proxy {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Proxy {
    /// Starts the proxy with `env` (ATELIER_* variables); autodetection is off
    /// unless `env` turns it on, so a local LLM server cannot change results.
    pub fn start(env: &[(&str, String)]) -> Proxy {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_atelier-proxy"));
        cmd.env_clear()
            .env("ATELIER_BIND", addr.to_string())
            .env("ATELIER_AUTODETECT", "false")
            .env("ATELIER_STATIC_DIR", std::env::temp_dir().join("atelier-no-static"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("the proxy starts");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "the proxy did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Proxy { child, addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Everything the proxy wrote to stderr so far.
    pub fn log(&self) -> String {
        std::thread::sleep(Duration::from_millis(50));
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback listener that must never be connected to; counts attempts.
pub struct Canary {
    pub port: u16,
    hits: Arc<AtomicUsize>,
}

impl Canary {
    pub fn start() -> Canary {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stream.is_ok() {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Canary { port, hits }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// The upstream key the tests configure (and look for in places it must never be).
pub const KEY: &str = "sk-test-SECRET-0123456789";

/// The proxy in front of `up`, with a key and both model aliases configured,
/// plus `extra` settings.
pub fn with_upstream(up: &FakeUpstream, extra: &[(&str, String)]) -> Proxy {
    let mut env = vec![
        ("ATELIER_UPSTREAM_URL", up.base()),
        ("ATELIER_UPSTREAM_KEY", KEY.to_owned()),
        ("ATELIER_MODEL_MAIN", "big-model".to_owned()),
        ("ATELIER_MODEL_SUB", "small-model".to_owned()),
    ];
    env.extend(extra.iter().cloned());
    Proxy::start(&env)
}

/// The status and the `error.type` of an error answer.
pub async fn error_of(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
    (status, body["error"]["type"].as_str().unwrap_or_default().to_owned())
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}
