//! A fake Ollama on 127.0.0.1 that behaves as the real one does where it
//! matters to the proxy (Ollama's docs/api.md and the issue threads cited
//! in `proxy/src/ollama.rs`): its OpenAI endpoint runs every prompt in the
//! default context of 4,096 tokens and cuts a longer one silently; its
//! native `/api/chat` honours `options.num_ctx` (up to the model's trained
//! length) and, with `truncate: false`, refuses a prompt that does not fit;
//! `/api/tags`, `/api/show` (trained length, capabilities) and `/api/ps`
//! (what is loaded, with which context) say what it serves. Tokens are
//! counted as 4 bytes of the messages' JSON each.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::{json, Value};

/// The default context of the real server on a machine under 24 GiB of VRAM.
pub const DEFAULT_CONTEXT: u64 = 4096;

/// A model the fake serves.
#[derive(Clone)]
pub struct FakeModel {
    pub name: &'static str,
    pub family: &'static str,
    pub parameter_size: &'static str,
    pub trained: u64,
    pub capabilities: &'static [&'static str],
}

/// What the next native chat answers (streamed as NDJSON lines).
pub enum NativeReply {
    Text(&'static str),
    /// Thinking, then calls (name, arguments object), each in a line of its own.
    Calls(&'static str, Vec<(&'static str, Value)>),
}

/// One chat request the fake received.
#[derive(Debug, Clone)]
pub struct Chat {
    pub path: String,
    pub body: Value,
    /// Prompt tokens counted, and how many it processed.
    pub tokens: u64,
    pub processed: u64,
}

#[derive(Default)]
struct Inner {
    models: Vec<FakeModel>,
    loaded: Mutex<HashMap<String, u64>>,
    chats: Mutex<Vec<Chat>>,
    replies: Mutex<VecDeque<NativeReply>>,
}

pub struct FakeOllama {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
}

impl FakeOllama {
    pub fn start(models: Vec<FakeModel>) -> FakeOllama {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let inner = Arc::new(Inner { models, ..Inner::default() });
        let app = axum::Router::new().fallback(answer).with_state(inner.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = axum::serve(listener, app).await;
            });
        });
        FakeOllama { addr, inner }
    }

    /// A model loaded now with `context` (as `/api/ps` shows it).
    pub fn load(&self, name: &str, context: u64) {
        self.inner.loaded.lock().unwrap().insert(name.to_owned(), context);
    }

    pub fn push(&self, reply: NativeReply) {
        self.inner.replies.lock().unwrap().push_back(reply);
    }

    pub fn chats(&self) -> Vec<Chat> {
        self.inner.chats.lock().unwrap().clone()
    }

    pub fn base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

fn json_response(status: u16, body: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn tokens_of(body: &Value) -> u64 {
    (body["messages"].to_string().len() as u64).div_ceil(4)
}

async fn answer(State(fake): State<Arc<Inner>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let bytes = axum::body::to_bytes(request.into_body(), usize::MAX).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let model = |name: &str| fake.models.iter().find(|m| m.name == name).cloned();
    match path.as_str() {
        "/api/version" => json_response(200, json!({"version": "0.12.3"})),
        "/v1/models" => json_response(
            200,
            json!({"object": "list", "data": fake.models.iter().map(|m| json!({"id": m.name, "object": "model", "created": 1, "owned_by": "library"})).collect::<Vec<_>>()}),
        ),
        "/api/tags" => json_response(
            200,
            json!({"models": fake.models.iter().map(|m| json!({"name": m.name, "model": m.name, "digest": format!("sha256:{}", m.name.len()),
                "details": {"format": "gguf", "family": m.family, "families": [m.family], "parameter_size": m.parameter_size}})).collect::<Vec<_>>()}),
        ),
        "/api/show" => match model(body["model"].as_str().unwrap_or_default()) {
            Some(m) => json_response(
                200,
                json!({"details": {"family": m.family}, "capabilities": m.capabilities,
                       "model_info": {"general.architecture": m.family, format!("{}.context_length", m.family): m.trained}}),
            ),
            None => json_response(404, json!({"error": "model not found"})),
        },
        "/api/ps" => {
            let loaded = fake.loaded.lock().unwrap().clone();
            json_response(
                200,
                json!({"models": loaded.iter().map(|(name, ctx)| json!({"name": name, "model": name, "context_length": ctx})).collect::<Vec<_>>()}),
            )
        }
        "/v1/chat/completions" => {
            // The OpenAI endpoint: the default context, whatever is asked; a
            // longer prompt keeps its first tokens and its end, the rest is gone.
            let tokens = tokens_of(&body);
            let processed = tokens.min(DEFAULT_CONTEXT);
            fake.chats.lock().unwrap().push(Chat { path, body: body.clone(), tokens, processed });
            let usage = json!({"prompt_tokens": processed, "completion_tokens": 3, "total_tokens": processed + 3});
            json_response(
                200,
                json!({"object": "chat.completion", "model": body["model"], "usage": usage,
                       "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": format!("processed {processed} of {tokens} tokens")}}]}),
            )
        }
        "/api/chat" => {
            let Some(m) = model(body["model"].as_str().unwrap_or_default()) else {
                return json_response(404, json!({"error": format!("model '{}' not found", body["model"])}));
            };
            if body["tools"].as_array().is_some_and(|t| !t.is_empty()) && !m.capabilities.contains(&"tools") {
                return json_response(
                    400,
                    json!({"error": format!("registry.ollama.ai/library/{} does not support tools", m.name)}),
                );
            }
            let num_ctx =
                body.pointer("/options/num_ctx").and_then(Value::as_u64).unwrap_or(DEFAULT_CONTEXT).min(m.trained);
            let tokens = tokens_of(&body);
            if tokens > num_ctx && body["truncate"] == json!(false) {
                return json_response(
                    400,
                    json!({"error": "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length"}),
                );
            }
            let processed = tokens.min(num_ctx);
            fake.loaded.lock().unwrap().insert(m.name.to_owned(), num_ctx);
            fake.chats.lock().unwrap().push(Chat { path, body: body.clone(), tokens, processed });
            let at = "2026-12-02T10:00:00Z";
            let line = |message: Value| json!({"model": m.name, "created_at": at, "message": message, "done": false});
            let mut lines = Vec::new();
            match fake.replies.lock().unwrap().pop_front() {
                Some(NativeReply::Calls(thinking, calls)) => {
                    lines.push(line(json!({"role": "assistant", "content": "", "thinking": thinking})));
                    for (name, arguments) in calls {
                        lines.push(line(json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"index": 0, "name": name, "arguments": arguments}}]})));
                    }
                }
                Some(NativeReply::Text(text)) => lines.push(line(json!({"role": "assistant", "content": text}))),
                None => lines.push(line(
                    json!({"role": "assistant", "content": format!("processed {processed} of {tokens} tokens")}),
                )),
            }
            lines.push(
                json!({"model": m.name, "created_at": at, "message": {"role": "assistant", "content": ""}, "done": true,
                              "done_reason": "stop", "prompt_eval_count": processed, "eval_count": 7}),
            );
            if body["stream"] == json!(false) {
                // One object: the lines folded together, as the real server answers.
                let mut message = json!({"role": "assistant", "content": "", "thinking": ""});
                let mut calls = Vec::new();
                for l in &lines {
                    let content = format!(
                        "{}{}",
                        message["content"].as_str().unwrap(),
                        l["message"]["content"].as_str().unwrap_or("")
                    );
                    message["content"] = json!(content);
                    calls.extend(l["message"]["tool_calls"].as_array().cloned().unwrap_or_default());
                    if let Some(t) = l["message"]["thinking"].as_str() {
                        message["thinking"] = json!(t);
                    }
                }
                if !calls.is_empty() {
                    message["tool_calls"] = json!(calls);
                }
                let mut done = lines.pop().unwrap();
                done["message"] = message;
                return json_response(200, done);
            }
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            Response::builder()
                .status(200)
                .header("content-type", "application/x-ndjson")
                .body(Body::from(text))
                .unwrap()
        }
        _ => json_response(404, json!({"error": format!("no route {path}")})),
    }
}
