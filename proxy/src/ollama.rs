//! Chat with Ollama through its native `/api/chat`, so that a request is
//! never cut silently. Ollama's OpenAI endpoint runs every prompt in the
//! server's default context (4,096 tokens on most machines), ignores
//! `num_ctx` there, and drops most of a longer prompt without an error
//! (ollama/ollama#2722, #5902, #6026). Here the request is translated to
//! `/api/chat` with `options.num_ctx` fitted to it and `truncate: false`,
//! and the answer back to OpenAI's format (SSE chunks, or one completion):
//! text, thinking (as `reasoning`), tool calls (Ollama's object arguments
//! as JSON text, each with its own index and id), the finish reason
//! (`tool_calls` when there are calls) and the usage (`prompt_eval_count`,
//! `eval_count`).
//!
//! `num_ctx`: the request's JSON size at 3 bytes a token (above the real
//! count for prose, code and JSON; about right for CJK text) plus
//! `max_tokens` (or 4,096) for the answer, rounded up to a power of two from
//! 8,192; never below the context the model is loaded with nor below what
//! was asked for it before (each change makes Ollama reload the model);
//! capped at the model's window (`facts.rs`: its trained length, at most
//! `ATELIER_OLLAMA_MAX_CONTEXT` unless it runs with more). A prompt that
//! exceeds the window even at 4 bytes a token is refused with
//! `context_overflow`; one between the two bounds gets the whole window, and
//! `truncate: false` makes Ollama refuse rather than cut what still does
//! not fit.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use crate::discovery::ModelInfo;
use crate::error::ProxyError;
use crate::models::ModelCatalog;

/// Tokens kept for the answer when the request does not say.
const ANSWER_RESERVE: u64 = 4096;
/// The smallest `num_ctx` asked for.
const LEAST_CONTEXT: u64 = 8192;

/// The `num_ctx` for a request of `bytes` (its JSON) asking for at most
/// `max_tokens`, on a model whose window is `window` and that is loaded with
/// (or was last asked for) `floor`; `Err` with the estimated prompt tokens
/// (at least) when the prompt cannot fit.
pub fn fit_num_ctx(bytes: usize, max_tokens: Option<u64>, window: u64, floor: u64) -> Result<u64, u64> {
    let bytes = bytes as u64;
    if bytes / 4 > window {
        return Err(bytes / 4);
    }
    let want = bytes.div_ceil(3) + max_tokens.unwrap_or(ANSWER_RESERVE);
    Ok(want.max(LEAST_CONTEXT).next_power_of_two().max(floor).min(window))
}

/// The OpenAI request `request` (its model already resolved to `model`) as
/// Ollama's `/api/chat` body with `num_ctx`.
pub fn native_request(request: &Value, model: &str, num_ctx: u64) -> Value {
    let mut names: HashMap<String, String> = HashMap::new();
    let messages: Vec<Value> = request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| native_message(m, &mut names))
        .collect();
    let mut options = Map::new();
    options.insert("num_ctx".into(), json!(num_ctx));
    for (from, to) in [
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("seed", "seed"),
        ("frequency_penalty", "frequency_penalty"),
        ("presence_penalty", "presence_penalty"),
        ("max_tokens", "num_predict"),
        ("max_completion_tokens", "num_predict"),
    ] {
        if let Some(v) = request.get(from).filter(|v| !v.is_null()) {
            options.insert(to.into(), v.clone());
        }
    }
    match request.get("stop") {
        Some(Value::String(stop)) => {
            options.insert("stop".into(), json!([stop]));
        }
        Some(stops @ Value::Array(_)) => {
            options.insert("stop".into(), stops.clone());
        }
        _ => {}
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": request.get("stream").and_then(Value::as_bool).unwrap_or(false),
        "options": options,
        "truncate": false,
    });
    if let Some(tools) = request.get("tools").filter(|t| t.as_array().is_some_and(|a| !a.is_empty())) {
        body["tools"] = tools.clone();
    }
    match request.get("response_format") {
        Some(f) if f.get("type").and_then(Value::as_str) == Some("json_object") => body["format"] = json!("json"),
        Some(f) => {
            if let Some(schema) = f.pointer("/json_schema/schema") {
                body["format"] = schema.clone();
            }
        }
        None => {}
    }
    match request.get("reasoning_effort").and_then(Value::as_str) {
        Some("none") => body["think"] = json!(false),
        Some(effort @ ("low" | "medium" | "high")) => body["think"] = json!(effort),
        _ => {}
    }
    body
}

/// One message in Ollama's shape: text content (parts joined, images as
/// base64), calls with object arguments, thinking, and the tool's name on a
/// result (`names` remembers each call id's tool).
fn native_message(m: &Value, names: &mut HashMap<String, String>) -> Value {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
    let mut out = json!({ "role": role, "content": "" });
    let mut images = Vec::new();
    match m.get("content") {
        Some(Value::String(text)) => out["content"] = json!(text),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
                let url = part.pointer("/image_url/url").and_then(Value::as_str).unwrap_or_default();
                if let Some((_, data)) = url.strip_prefix("data:").and_then(|u| u.split_once(";base64,")) {
                    images.push(json!(data));
                }
            }
            out["content"] = json!(text);
        }
        _ => {}
    }
    if !images.is_empty() {
        out["images"] = json!(images);
    }
    if let Some(thinking) = m.get("reasoning_content").or_else(|| m.get("reasoning")).filter(|t| t.is_string()) {
        out["thinking"] = thinking.clone();
    }
    if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                let name = c.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
                let arguments = match c.pointer("/function/arguments") {
                    Some(Value::String(text)) => serde_json::from_str(text).ok().filter(Value::is_object),
                    Some(object @ Value::Object(_)) => Some(object.clone()),
                    _ => None,
                };
                let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
                names.insert(id.to_owned(), name.to_owned());
                json!({ "id": id, "function": { "name": name, "arguments": arguments.unwrap_or_else(|| json!({})) } })
            })
            .collect();
        out["tool_calls"] = json!(calls);
    }
    if let Some(id) = m.get("tool_call_id").and_then(Value::as_str) {
        out["tool_call_id"] = json!(id);
        if let Some(name) = names.get(id) {
            out["tool_name"] = json!(name);
        }
    }
    out
}

/// Turns Ollama's answer (NDJSON lines, or one JSON object) into OpenAI's.
#[derive(Debug)]
pub struct Translator {
    stream: bool,
    include_usage: bool,
    model: String,
    id: String,
    created: u64,
    line: Vec<u8>,
    started: bool,
    calls: usize,
    /// Done: the finish chunk (and `[DONE]`) was written.
    ended: bool,
    /// Non-streamed: the whole answer so far.
    content: String,
    thinking: String,
    tool_calls: Vec<Value>,
}

impl Translator {
    /// A translator for the answer to `request` (the client's OpenAI request).
    pub fn new(request: &Value, model: &str) -> Translator {
        let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Translator {
            stream: request.get("stream").and_then(Value::as_bool).unwrap_or(false),
            include_usage: request.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
            model: model.to_owned(),
            id: format!("chatcmpl-{}", fresh_id()),
            created,
            line: Vec::new(),
            started: false,
            calls: 0,
            ended: false,
            content: String::new(),
            thinking: String::new(),
            tool_calls: Vec::new(),
        }
    }

    /// Whether the client asked for a stream (the answer is SSE).
    pub fn streams(&self) -> bool {
        self.stream
    }

    /// The next bytes of Ollama's answer; returns what to send the client.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.line_done(&line, &mut out);
            } else {
                self.line.push(b);
            }
        }
        out
    }

    /// Ollama's answer ended: what is still owed to the client.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let line = std::mem::take(&mut self.line);
        self.line_done(&line, &mut out);
        if !self.ended {
            if self.stream {
                // Ollama went away without `done`: end the stream plainly (no
                // finish reason, so the client can tell it was cut).
                out.extend_from_slice(b"data: [DONE]\n\n");
            } else {
                let error = json!({ "error": { "message": "Ollama's answer ended before it was complete", "type": "upstream_error" } });
                out.extend_from_slice(error.to_string().as_bytes());
            }
            self.ended = true;
        }
        out
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Vec<u8> {
        let chunk = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        });
        format!("data: {chunk}\n\n").into_bytes()
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<u8>) {
        if self.ended || line.trim_ascii().is_empty() {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if let Some(error) = value.get("error") {
            let message = error.as_str().map_or_else(|| error.to_string(), str::to_owned);
            let error = json!({ "error": { "message": message, "type": "upstream_error" } });
            if self.stream {
                out.extend_from_slice(format!("data: {error}\n\ndata: [DONE]\n\n").as_bytes());
            } else {
                out.extend_from_slice(error.to_string().as_bytes());
            }
            self.ended = true;
            return;
        }
        let message = value.get("message");
        let text = |key| message.and_then(|m| m.get(key)).and_then(Value::as_str).unwrap_or_default();
        let (content, thinking) = (text("content"), text("thinking"));
        let calls: Vec<Value> = message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let index = self.calls;
                self.calls += 1;
                let id = c.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()).map_or_else(fresh_id, str::to_owned);
                let arguments = match c.pointer("/function/arguments") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) if !other.is_null() => other.to_string(),
                    _ => "{}".to_owned(),
                };
                let name = c.pointer("/function/name").cloned().unwrap_or(json!(""));
                json!({ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": arguments } })
            })
            .collect();
        let done = value.get("done").and_then(Value::as_bool).unwrap_or(false);
        if !self.stream {
            self.content.push_str(content);
            self.thinking.push_str(thinking);
            self.tool_calls.extend(calls);
            if done {
                out.extend_from_slice(self.completion(&value).to_string().as_bytes());
                self.ended = true;
            }
            return;
        }
        if !self.started {
            self.started = true;
            out.extend(self.chunk(json!({ "role": "assistant", "content": "" }), None));
        }
        if !thinking.is_empty() {
            out.extend(self.chunk(json!({ "reasoning": thinking }), None));
        }
        if !content.is_empty() {
            out.extend(self.chunk(json!({ "content": content }), None));
        }
        if !calls.is_empty() {
            out.extend(self.chunk(json!({ "tool_calls": calls }), None));
        }
        if done {
            out.extend(self.chunk(json!({}), Some(&self.finish_reason(&value))));
            if self.include_usage {
                let usage = json!({ "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                    "model": self.model, "choices": [], "usage": usage(&value) });
                out.extend_from_slice(format!("data: {usage}\n\n").as_bytes());
            }
            out.extend_from_slice(b"data: [DONE]\n\n");
            self.ended = true;
        }
    }

    fn finish_reason(&self, done: &Value) -> String {
        match done.get("done_reason").and_then(Value::as_str) {
            _ if self.calls > 0 => "tool_calls".into(),
            Some("length") => "length".into(),
            _ => "stop".into(),
        }
    }

    fn completion(&self, done: &Value) -> Value {
        let mut message = json!({ "role": "assistant", "content": self.content });
        if !self.thinking.is_empty() {
            message["reasoning"] = json!(self.thinking);
        }
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = json!(self.tool_calls);
        }
        json!({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{ "index": 0, "message": message, "finish_reason": self.finish_reason(done) }],
            "usage": usage(done),
        })
    }
}

/// OpenAI's usage from Ollama's counts.
fn usage(done: &Value) -> Value {
    let count = |k| done.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (prompt, completion) = (count("prompt_eval_count"), count("eval_count"));
    json!({ "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion })
}

/// A call id: 9 ASCII letters and digits (the shape every server takes back).
fn fresh_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    let mut n = hasher.finish();
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..9)
        .map(|_| {
            let c = ALPHABET[(n % 62) as usize] as char;
            n /= 62;
            c
        })
        .collect()
}

/// The native request for `request` to `model` on Ollama (its `num_ctx`
/// fitted and remembered in `catalog`), or the `context_overflow` refusal.
pub fn prepare(request: &Value, info: &ModelInfo, catalog: &ModelCatalog, ceiling: u64) -> Result<Value, ProxyError> {
    let bytes = request.get("messages").map_or(0, |m| m.to_string().len())
        + request.get("tools").map_or(0, |t| t.to_string().len());
    let max_tokens = request.get("max_tokens").or_else(|| request.get("max_completion_tokens")).and_then(Value::as_u64);
    let window = info.context_window.unwrap_or(ceiling);
    let mut asked = catalog.num_ctx.lock().unwrap_or_else(|p| p.into_inner());
    let floor = asked.get(&info.id).copied().max(info.loaded_context).unwrap_or(0);
    let num_ctx = fit_num_ctx(bytes, max_tokens, window, floor).map_err(|tokens| {
        ProxyError::new(
            StatusCode::BAD_REQUEST,
            "context_overflow",
            format!(
                "the request takes about {tokens} tokens, more than the {window} tokens of context the proxy gives {} on \
                 Ollama (its trained length, at most ATELIER_OLLAMA_MAX_CONTEXT unless the model already runs with more): \
                 shorten the conversation or raise ATELIER_OLLAMA_MAX_CONTEXT",
                info.id
            ),
        )
    })?;
    asked.insert(info.id.clone(), num_ctx);
    Ok(native_request(request, &info.id, num_ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_ctx_fits_the_request_and_never_shrinks_below_the_floor() {
        // (bytes, max_tokens, window, floor) → num_ctx
        let cases = [
            ((2_000, None, 32_768, 0), Ok(8192)),
            ((30_000, None, 32_768, 0), Ok(16_384)),
            ((40_000, Some(1_000), 131_072, 0), Ok(16_384)),
            ((90_000, None, 32_768, 0), Ok(32_768)),
            ((2_000, None, 32_768, 16_384), Ok(16_384)),
            ((2_000, None, 4_096, 0), Ok(4_096)),
            ((120_000, None, 32_768, 0), Ok(32_768)),
            ((140_000, None, 32_768, 0), Err(35_000)),
        ];
        for ((bytes, max, window, floor), want) in cases {
            assert_eq!(fit_num_ctx(bytes, max, window, floor), want, "{bytes} bytes, window {window}, floor {floor}");
        }
    }

    #[test]
    fn requests_are_translated_to_the_native_shape() {
        let request = json!({
            "model": "main", "stream": true, "stream_options": {"include_usage": true},
            "temperature": 0.2, "max_tokens": 500, "stop": "END", "reasoning_effort": "low",
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
            "tools": [{"type": "function", "function": {"name": "open_url", "description": "d", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "text", "text": "look "}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]},
                {"role": "assistant", "content": null, "reasoning_content": "two pages",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"a\"}"}},
                                {"id": "c2", "type": "function", "function": {"name": "open_url", "arguments": "not json"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "page a"},
                {"role": "tool", "tool_call_id": "c2", "content": "page b"}
            ]
        });
        let native = native_request(&request, "qwen3:8b", 16_384);
        assert_eq!(
            native,
            json!({
                "model": "qwen3:8b", "stream": true, "truncate": false, "think": "low", "format": {"type": "object"},
                "options": {"num_ctx": 16384, "temperature": 0.2, "num_predict": 500, "stop": ["END"]},
                "tools": request["tools"],
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "look ", "images": ["iVBOR"]},
                    {"role": "assistant", "content": "", "thinking": "two pages", "tool_calls": [
                        {"id": "c1", "function": {"name": "open_url", "arguments": {"url": "a"}}},
                        {"id": "c2", "function": {"name": "open_url", "arguments": {}}}]},
                    {"role": "tool", "content": "page a", "tool_call_id": "c1", "tool_name": "open_url"},
                    {"role": "tool", "content": "page b", "tool_call_id": "c2", "tool_name": "open_url"}
                ]
            })
        );
    }

    /// Ollama's NDJSON answer lines, as its API documents them (docs/api.md,
    /// "Generate a chat completion": streaming, tool calls, the final line
    /// with `done_reason` and the counts).
    fn ndjson(lines: &[Value]) -> Vec<u8> {
        lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
    }

    fn ollama_answer() -> Vec<u8> {
        let at = "2026-12-02T10:00:00Z";
        ndjson(&[
            json!({"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": "", "thinking": "Both pages."}, "done": false}),
            json!({"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_a", "function": {"index": 0, "name": "open_url", "arguments": {"url": "https://a.example"}}}]}, "done": false}),
            json!({"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"index": 0, "name": "open_url", "arguments": {"url": "https://b.example"}}}]}, "done": false}),
            json!({"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": ""}, "done": true,
                   "done_reason": "stop", "total_duration": 1, "prompt_eval_count": 10000, "eval_count": 42}),
        ])
    }

    #[test]
    fn streamed_answers_become_openai_chunks_wherever_the_lines_split() {
        let request = json!({"stream": true, "stream_options": {"include_usage": true}});
        let bytes = ollama_answer();
        for size in [1, 5, 64, bytes.len()] {
            let mut t = Translator::new(&request, "main-model");
            let mut sse = Vec::new();
            for piece in bytes.chunks(size) {
                sse.extend(t.feed(piece));
            }
            sse.extend(t.finish());
            let text = String::from_utf8(sse).unwrap();
            let events: Vec<Value> = text
                .split("\n\n")
                .filter_map(|e| e.strip_prefix("data: "))
                .filter(|d| *d != "[DONE]")
                .map(|d| serde_json::from_str(d).unwrap())
                .collect();
            assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
            assert_eq!(events[1]["choices"][0]["delta"]["reasoning"], "Both pages.");
            let calls: Vec<&Value> =
                events.iter().filter_map(|e| e["choices"][0]["delta"]["tool_calls"].get(0)).collect();
            assert_eq!(calls.len(), 2);
            assert_eq!(
                (calls[0]["index"].as_u64(), calls[1]["index"].as_u64()),
                (Some(0), Some(1)),
                "each call its own index"
            );
            assert_eq!(calls[0]["id"], "call_a");
            assert_eq!(calls[1]["id"].as_str().unwrap().len(), 9, "an id made for the call without one");
            assert_eq!(calls[1]["function"]["arguments"], "{\"url\":\"https://b.example\"}");
            let finish = events.iter().find_map(|e| e["choices"][0]["finish_reason"].as_str()).unwrap();
            assert_eq!(finish, "tool_calls");
            let usage = &events.last().unwrap()["usage"];
            assert_eq!((usage["prompt_tokens"].as_u64(), usage["completion_tokens"].as_u64()), (Some(10000), Some(42)));
        }
    }

    #[test]
    fn whole_answers_and_errors_are_translated() {
        let mut t = Translator::new(&json!({"stream": false}), "m");
        let mut body = t.feed(&ollama_answer());
        body.extend(t.finish());
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(answer["choices"][0]["message"]["reasoning"], "Both pages.");
        assert_eq!(answer["choices"][0]["message"]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(answer["usage"]["total_tokens"], 10042);

        let mut t = Translator::new(&json!({"stream": true}), "m");
        let out = t.feed(b"{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n{\"error\":\"model runner crashed\"}\n");
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("\"content\":\"Hi\"")
                && text.contains("model runner crashed")
                && text.ends_with("data: [DONE]\n\n"),
            "{text}"
        );
        let mut cut = Translator::new(&json!({"stream": true}), "m");
        let mut out = cut.feed(b"{\"message\":{\"content\":\"par\"},\"done\":false}\n");
        out.extend(cut.finish());
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("data: [DONE]\n\n") && !text.contains("finish_reason\":\"stop"), "{text}");
    }
}
