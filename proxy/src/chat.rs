//! `/api/chat` and `/v1/chat/completions`: OpenAI Chat Completions passed
//! through to the upstream with the server-side key. Streaming answers are
//! forwarded chunk by chunk as they arrive (never buffered); upstream errors
//! become JSON errors with the upstream's status. An Ollama upstream gets the
//! request in its native shape with the context fitted (`ollama.rs`), its
//! answer translated back chunk by chunk.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::error::ProxyError;
use crate::log::UpstreamLatency;
use crate::state::AppState;
use crate::upstream::Upstream;
use crate::usage::UsageTap;
use crate::{ollama, text_tools};

/// Logs an answer's token counts (one `{"event":"usage",...}` line on stderr)
/// when its body is done with: streamed to the end, or dropped.
struct UsageLog {
    tap: Option<UsageTap>,
    model: String,
}

impl UsageLog {
    fn feed(&mut self, bytes: &[u8]) {
        if let Some(tap) = &mut self.tap {
            tap.feed(bytes);
        }
    }
}

impl Drop for UsageLog {
    fn drop(&mut self) {
        if let Some(line) = self.tap.take().and_then(|tap| tap.log_line(&self.model)) {
            eprintln!("{line}");
        }
    }
}

/// Largest upstream error body read to build the error message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

pub async fn completions(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    match forward(&state, body).await {
        Ok(response) => response,
        Err((err, latency)) => {
            let mut response = err.into_response();
            if let Some(l) = latency {
                response.extensions_mut().insert(l);
            }
            response
        }
    }
}

pub(crate) type Failure = (ProxyError, Option<UpstreamLatency>);

async fn forward(state: &AppState, body: Bytes) -> Result<Response, Failure> {
    let Some(shared) = state.upstreams.for_chat().await else {
        return Err((not_configured(), None));
    };
    let upstream = shared.as_ref();
    let mut request: Value = serde_json::from_slice(&body)
        .map_err(|e| (ProxyError::bad_request(format!("the body is not JSON: {e}")), None))?;
    let Some(fields) = request.as_object_mut() else {
        return Err((ProxyError::bad_request("the body must be a JSON object"), None));
    };
    let requested = fields.get("model").and_then(Value::as_str);
    let model = upstream
        .catalog
        .resolve(&state.http, upstream, requested, state.allow_any_model)
        .await
        .map_err(|e| (e, None))?;
    let requested_model = model.clone();
    fields.insert("model".into(), Value::String(model.clone()));

    let listing = upstream.catalog.for_chat(&state.http, &shared).await;
    // A model its server says takes no tools gets them as text (`text_tools.rs`),
    // as does one whose server refused them before (learned below).
    let info = match listing.ollama {
        true => Some(upstream.catalog.ollama_model(&state.http, upstream, &listing, &model).await),
        false => listing.models.iter().find(|m| m.id == model).cloned(),
    };
    let refused = upstream.catalog.refused_tools.lock().map(|r| r.contains(&model)).unwrap_or(false);
    let mut as_text = (refused || info.as_ref().and_then(|i| i.capabilities).is_some_and(|c| !c.tools))
        && text_tools::inline_tools(&mut request);
    let prepare = |request: &Value| -> Result<_, Failure> {
        Ok(match &info {
            Some(info) if listing.ollama => {
                let native = ollama::prepare(request, info, &upstream.catalog, upstream.ollama_max_context)
                    .map_err(|e| (e, None))?;
                let root = upstream.base.strip_suffix("/v1").unwrap_or(&upstream.base);
                (
                    format!("{root}/api/chat"),
                    serde_json::to_vec(&native),
                    Some(ollama::Translator::new(request, &model)),
                )
            }
            _ => (format!("{}/chat/completions", upstream.base), serde_json::to_vec(request), None),
        })
    };
    let (url, payload, mut translator) = prepare(&request)?;
    let (mut answer, mut latency) = send_upstream(state, &shared, url, payload.unwrap_or_default()).await?;
    while !answer.status().is_success() {
        let err = upstream_error(upstream, answer).await;
        // A server that reports no capabilities but refuses `tools` (Ollama's
        // "… does not support tools", llama.cpp without `--jinja`, vLLM
        // without a tool parser): the same request again with the tools as
        // text, and every later one of this model at once.
        if as_text || !refuses_tools(&err) || !text_tools::inline_tools(&mut request) {
            return Err((err, Some(latency)));
        }
        if let Ok(mut refused) = upstream.catalog.refused_tools.lock() {
            refused.insert(model.clone());
        }
        eprintln!("{}", json!({"event": "tools_as_text", "model": model, "because": err.message}));
        as_text = true;
        let (url, payload, again) = prepare(&request)?;
        translator = again;
        (answer, latency) = send_upstream(state, &shared, url, payload.unwrap_or_default()).await?;
    }
    let status = answer.status();
    let content_type = match &translator {
        Some(t) => Some(HeaderValue::from_static(if t.streams() { "text/event-stream" } else { "application/json" })),
        None => answer.headers().get(header::CONTENT_TYPE).cloned(),
    };
    let is_stream =
        content_type.as_ref().and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/event-stream"));
    let redactor = shared.clone();
    // The token counts are read as the bytes pass and logged when the answer ends.
    let mut usage = UsageLog { tap: Some(UsageTap::new(is_stream)), model: requested_model };
    let body = match translator {
        Some(translator) => Body::from_stream(translated(answer, translator, usage, redactor)),
        None => Body::from_stream(answer.bytes_stream().map(move |chunk| {
            if let Ok(bytes) = &chunk {
                usage.feed(bytes);
            }
            chunk.map_err(|e| std::io::Error::other(redactor.redact(&e.to_string())))
        })),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type.unwrap_or_else(|| HeaderValue::from_static("application/json")));
    if is_stream {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    response.extensions_mut().insert(latency);
    Ok(response)
}

/// POSTs `payload` (JSON) to `url` of the upstream with its key; the
/// answer's head and how long it took, or why it could not be reached (a
/// detected local server that went away is forgotten, so the next request
/// looks again).
pub(crate) async fn send_upstream(
    state: &AppState,
    shared: &Arc<Upstream>,
    url: String,
    payload: Vec<u8>,
) -> Result<(reqwest::Response, UpstreamLatency), Failure> {
    let mut call = state.http.post(url).header(header::CONTENT_TYPE, "application/json").body(payload);
    if let Some(key) = shared.key() {
        call = call.bearer_auth(key);
    }
    let started = Instant::now();
    let answer = call.send().await;
    let latency = UpstreamLatency(started.elapsed());
    match answer {
        Ok(answer) => Ok((answer, latency)),
        Err(e) => {
            if e.is_connect() {
                state.upstreams.lost(shared);
            }
            Err((unreachable(shared, &e), Some(latency)))
        }
    }
}

/// Ollama's answer as OpenAI's, translated as its bytes arrive.
fn translated(
    answer: reqwest::Response,
    translator: ollama::Translator,
    usage: UsageLog,
    redactor: Arc<Upstream>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    let inner = Box::pin(answer.bytes_stream());
    futures_util::stream::unfold(
        (inner, Some(translator), usage, redactor),
        |(mut inner, translator, mut usage, redactor)| async move {
            let mut translator = translator?;
            loop {
                let out = match inner.next().await {
                    Some(Ok(bytes)) => translator.feed(&bytes),
                    Some(Err(e)) => {
                        let error = std::io::Error::other(redactor.redact(&e.to_string()));
                        return Some((Err(error), (inner, None, usage, redactor)));
                    }
                    None => {
                        let out = translator.finish();
                        usage.feed(&out);
                        return Some((Ok(Bytes::from(out)), (inner, None, usage, redactor)));
                    }
                };
                if !out.is_empty() {
                    usage.feed(&out);
                    return Some((Ok(Bytes::from(out)), (inner, Some(translator), usage, redactor)));
                }
            }
        },
    )
}

pub(crate) fn not_configured() -> ProxyError {
    ProxyError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "upstream_not_configured",
        "No LLM is configured on the proxy and no local model server was found. Start one (Ollama, llama.cpp, \
         LM Studio or vLLM on its usual port: the proxy looks again on the next message), or restart the proxy with \
         ATELIER_UPSTREAM_URL set to an OpenAI-compatible base URL (e.g. https://api.openai.com/v1 with \
         ATELIER_UPSTREAM_KEY).",
    )
}

fn unreachable(upstream: &Upstream, e: &reqwest::Error) -> ProxyError {
    let (status, kind) = if e.is_timeout() {
        (StatusCode::GATEWAY_TIMEOUT, "upstream_timeout")
    } else {
        (StatusCode::BAD_GATEWAY, "upstream_unreachable")
    };
    let detail = upstream.redact(&e.to_string());
    ProxyError::new(status, kind, format!("cannot reach the LLM upstream at {}: {detail}", upstream.display_base()))
}

/// Whether an upstream error says the model or server takes no `tools`.
fn refuses_tools(err: &ProxyError) -> bool {
    let message = err.message.to_lowercase();
    matches!(err.upstream_status, Some(400 | 422 | 500 | 501))
        && [
            "tools param requires",
            "unsupported param: tools",
            "tool choice requires",
            "tools are not supported",
            "tool use is not supported",
            "does not support tool", // also "… does not support tools"
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
}

/// Maps an upstream error answer to a JSON error with the same status.
pub(crate) async fn upstream_error(upstream: &Upstream, answer: reqwest::Response) -> ProxyError {
    let status = answer.status();
    let retry_after = answer.headers().get(header::RETRY_AFTER).cloned();
    let mut body = Vec::new();
    let mut stream = answer.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_LIMIT {
            body.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let message = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| {
            let m = v.pointer("/error/message").or_else(|| v.get("error")).or_else(|| v.get("message"))?;
            Some(m.as_str().map(str::to_owned).unwrap_or_else(|| m.to_string()))
        })
        .unwrap_or_else(|| text.trim().chars().take(500).collect());
    let message = upstream.redact(&message);
    let lower = message.to_lowercase();
    let kind = match status.as_u16() {
        400 if lower.contains("context") && (lower.contains("length") || lower.contains("window")) => {
            "context_length_exceeded"
        }
        400 if lower.contains("response_format") || lower.contains("json_schema") || lower.contains("structured") => {
            "structured_output_unsupported"
        }
        400 | 422 => "bad_request",
        401 | 403 => "upstream_auth",
        404 => "not_found",
        408 | 504 => "upstream_timeout",
        413 => "request_too_large",
        429 => "rate_limited",
        _ => "upstream_error",
    };
    let message = if message.is_empty() { format!("the upstream answered {status}") } else { message };
    let mut err =
        ProxyError::new(StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY), kind, message);
    err.upstream_status = Some(status.as_u16());
    err.retry_after = retry_after.and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok());
    err
}
