//! `ProxyModel`: the browser's [`ChatModel`], talking to atelier-proxy's
//! `/api/chat` with `fetch`. Answers are streamed (SSE) and delivered delta
//! by delta; a [`CancelToken`] aborts the HTTP request itself (the upstream
//! sees the disconnect); 429/5xx/network failures are retried with backoff
//! until output has started.
//!
//! Requests are built and sent with gloo-net; the response body is read as a
//! stream through web-sys's `ReadableStream` reader, where gloo-net stops
//! (gloo-net costs 1.7 KB gzip over the raw calls: BENCHMARKS.md).

use std::cell::RefCell;

use async_trait::async_trait;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, Response};

use super::error::{LlmError, Result};
use super::model::ChatModel;
use super::retry::{with_retries, AttemptError, RetryPolicy};
use super::sse::SseDecoder;
use super::stream::{parse_completion_with, StreamAssembler};
use super::template::Learned;
use super::types::{ChatOutcome, ChatRequest, Delta};
use crate::cancel::CancelToken;

/// Where the proxy is and how to talk to it.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Base URL of the proxy's API, e.g. "/api" or "https://host/api".
    pub base_url: String,
    /// Bearer token, when the proxy requires one (ATELIER_CLIENT_TOKEN).
    pub client_token: Option<String>,
    pub retry: RetryPolicy,
}

/// A [`ChatModel`] backed by atelier-proxy.
pub struct ProxyModel {
    config: ProxyConfig,
    /// Models seen to close a think block their server opened in the
    /// prompt: their answers are read as reasoning until `</think>`.
    prefilled_think: RefCell<Vec<String>>,
    /// What servers refused of each model (the system role, a tool-call
    /// turn without its reasoning), learned once.
    learned: Learned,
}

impl ProxyModel {
    pub fn new(config: ProxyConfig) -> ProxyModel {
        ProxyModel { config, prefilled_think: RefCell::default(), learned: Learned::default() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.config.base_url.trim_end_matches('/'), path)
    }

    async fn attempt(
        &self,
        body: &str,
        mut assembler: StreamAssembler,
        sink: &RefCell<&mut dyn FnMut(Delta)>,
        cancel: &CancelToken,
    ) -> std::result::Result<(ChatOutcome, bool), AttemptError> {
        let request = post_request(&self.url("chat"), self.config.client_token.as_deref(), body, cancel)?;
        let response = send(request, cancel).await?;
        if !response.ok() {
            let retry_after = response.headers().get("retry-after").ok().flatten();
            let text = match response.text() {
                Ok(p) => JsFuture::from(p).await.ok().and_then(|t| t.as_string()).unwrap_or_default(),
                Err(_) => String::new(),
            };
            return Err(LlmError::from_http(response.status(), &text, retry_after.as_deref()).into());
        }
        let is_stream =
            response.headers().get("content-type").ok().flatten().is_some_and(|t| t.starts_with("text/event-stream"));
        if !is_stream {
            let text = match response.text() {
                Ok(p) => JsFuture::from(p).await.map_err(|e| failure(cancel, &e, false))?,
                Err(e) => return Err(failure(cancel, &e, false)),
            };
            let outcome = parse_completion_with(&text.as_string().unwrap_or_default(), assembler)?;
            return Ok((outcome, false));
        }
        let stream =
            response.body().ok_or_else(|| AttemptError::from(LlmError::MalformedResponse("an empty stream".into())))?;
        let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
        let mut decoder = SseDecoder::new();
        loop {
            let chunk = match JsFuture::from(reader.read()).await {
                Ok(chunk) => chunk,
                Err(e) => return Err(failure(cancel, &e, assembler.has_output())),
            };
            let done = Reflect::get(&chunk, &JsValue::from_str("done")).ok().and_then(|d| d.as_bool()).unwrap_or(true);
            if done {
                break;
            }
            let bytes = Reflect::get(&chunk, &JsValue::from_str("value"))
                .map(|v| Uint8Array::new(&v).to_vec())
                .unwrap_or_default();
            let events = decoder.feed(&bytes).map_err(|e| AttemptError {
                error: LlmError::MalformedResponse(e.to_string()),
                delivered_output: assembler.has_output(),
            })?;
            for event in events {
                let mut sink = sink.borrow_mut();
                // An error inside the stream is retried only while nothing was shown.
                if let Err(error) = assembler.push_event(&event, &mut **sink) {
                    return Err(AttemptError { error, delivered_output: assembler.has_output() });
                }
            }
            if assembler.is_done() {
                let _ = reader.cancel();
                break;
            }
        }
        let mut sink = sink.borrow_mut();
        if let Some(event) = decoder.finish() {
            if let Err(error) = assembler.push_event(&event, &mut **sink) {
                return Err(AttemptError { error, delivered_output: assembler.has_output() });
            }
        }
        let prefilled = assembler.saw_prefilled_think();
        let delivered_output = assembler.has_output();
        let outcome = assembler.finish_with(&mut **sink).map_err(|error| AttemptError { error, delivered_output })?;
        Ok((outcome, prefilled))
    }
}

fn describe(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

fn network(e: &JsValue) -> AttemptError {
    LlmError::UpstreamUnavailable { status: None, message: describe(e) }.into()
}

/// A fetch or read that failed: aborted when we cancelled, a network error otherwise.
fn failure(cancel: &CancelToken, e: &JsValue, delivered_output: bool) -> AttemptError {
    let error = if cancel.is_cancelled() {
        LlmError::Aborted
    } else {
        LlmError::UpstreamUnavailable { status: None, message: format!("cannot reach the proxy: {}", describe(e)) }
    };
    AttemptError { error, delivered_output }
}

#[async_trait(?Send)]
impl ChatModel for ProxyModel {
    async fn chat(
        &self,
        request: ChatRequest,
        on_delta: &mut dyn FnMut(Delta),
        cancel: &CancelToken,
    ) -> Result<ChatOutcome> {
        let prefill = self.prefilled_think.borrow().contains(&request.model);
        // A fresh assembler per attempt: a retry starts the answer anew.
        let assembler = || {
            let assembler = StreamAssembler::new();
            if prefill {
                assembler.with_prefilled_think()
            } else {
                assembler
            }
        };
        let model = request.model.clone();
        let sink = RefCell::new(on_delta);
        // A refusal a changed layout answers is learned and the request sent
        // again in it (at most once per kind of refusal and model).
        let mut request = request;
        let (outcome, prefilled) = loop {
            self.learned.adapt(&mut request);
            let body = request.wire_body().map_err(|e| LlmError::MalformedResponse(e.to_string()))?;
            match with_retries(&self.config.retry, cancel, |_| self.attempt(&body, assembler(), &sink, cancel)).await {
                Err(e) if self.learned.learn(&model, &e) => continue,
                done => break done?,
            }
        };
        if prefilled {
            self.prefilled_think.borrow_mut().push(model);
        }
        Ok(outcome)
    }

    /// The window `/api/health` reports: `main`'s or `sub`'s for an alias,
    /// else the listed model's.
    async fn context_window(&self, model: &str) -> Option<usize> {
        let mut request = gloo_net::http::Request::get(&self.url("health"));
        if let Some(token) = &self.config.client_token {
            request = request.header("authorization", &format!("Bearer {token}"));
        }
        let response = send(request.build().ok()?, &CancelToken::new()).await.ok()?;
        let text = JsFuture::from(response.text().ok()?).await.ok()?.as_string()?;
        let health: serde_json::Value = serde_json::from_str(&text).ok()?;
        let models = &health["chat"]["upstream"]["models"];
        let info = match models.get(model) {
            Some(info) if model == "main" || model == "sub" => info,
            _ => models["available"].as_array()?.iter().find(|m| m["id"] == model)?,
        };
        info["contextWindow"].as_u64().map(|w| w as usize)
    }
}

/// POSTs `body` (JSON) to `url` and returns the status and the body text;
/// `cancel` aborts the request. Used for the proxy's tool endpoints.
pub(crate) async fn post_json(
    url: &str,
    token: Option<&str>,
    body: &str,
    cancel: &CancelToken,
) -> Result<(u16, String)> {
    let request = post_request(url, token, body, cancel).map_err(|e| e.error)?;
    let response = send(request, cancel).await.map_err(|e| e.error)?;
    let text = match response.text() {
        Ok(p) => JsFuture::from(p).await.map_err(|e| failure(cancel, &e, false).error)?.as_string().unwrap_or_default(),
        Err(e) => return Err(failure(cancel, &e, false).error),
    };
    Ok((response.status(), text))
}

/// A JSON POST to the proxy whose fetch `cancel` aborts (gloo-net builds
/// and sends it; the response body is read as a stream through web-sys).
fn post_request(
    url: &str,
    token: Option<&str>,
    body: &str,
    cancel: &CancelToken,
) -> std::result::Result<gloo_net::http::Request, AttemptError> {
    let controller = AbortController::new().map_err(|e| network(&e))?;
    {
        let controller = controller.clone();
        cancel.on_cancel(move || controller.abort());
    }
    let mut builder = gloo_net::http::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream, application/json")
        .abort_signal(Some(&controller.signal()));
    if let Some(token) = token {
        builder = builder.header("authorization", &format!("Bearer {token}"));
    }
    builder.body(body.to_owned()).map_err(|e| gloo_failure(cancel, e, false))
}

/// A gloo-net failure (network, abort) as the client's error.
fn gloo_failure(cancel: &CancelToken, e: gloo_net::Error, delivered_output: bool) -> AttemptError {
    let detail = match e {
        gloo_net::Error::JsError(js) => js.message,
        other => other.to_string(),
    };
    failure(cancel, &JsValue::from_str(&detail), delivered_output)
}

/// Sends `request`; the raw `Response` for status, headers and the body stream.
async fn send(request: gloo_net::http::Request, cancel: &CancelToken) -> std::result::Result<Response, AttemptError> {
    request.send().await.map(Response::from).map_err(|e| gloo_failure(cancel, e, false))
}
