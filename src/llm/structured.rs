//! Structured output with a fallback: ask with a JSON Schema
//! `response_format`; if the upstream refuses it or answers something that
//! is not JSON, ask again with the schema in the prompt and extract the JSON
//! tolerantly. The caller learns which path produced the value.

use serde::Serialize;
use serde_json::{json, Value};

use super::error::{LlmError, Result};
use super::model::ChatModel;
use super::types::ChatRequest;
use crate::cancel::CancelToken;

/// Which way the structured answer was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredPath {
    /// The upstream honoured `response_format` (JSON Schema).
    Schema,
    /// The schema was put in the prompt and the JSON extracted from the text.
    Prompt,
}

/// A structured answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    pub value: Value,
    pub path: StructuredPath,
}

/// Asks `model` for a JSON value matching `schema` (named `name`).
pub async fn ask_structured(
    model: &dyn ChatModel,
    request: ChatRequest,
    name: &str,
    schema: &Value,
    cancel: &CancelToken,
) -> Result<Structured> {
    let mut with_schema = request.clone();
    with_schema.response_format =
        Some(json!({ "type": "json_schema", "json_schema": { "name": name, "strict": true, "schema": schema } }));
    match model.chat(with_schema, &mut |_| {}, cancel).await {
        Ok(outcome) => {
            if let Some(value) = extract_json(outcome.message.text()) {
                return Ok(Structured { value, path: StructuredPath::Schema });
            }
        }
        Err(LlmError::StructuredOutputRefused(_) | LlmError::BadRequest { status: 400, .. }) => {}
        Err(other) => return Err(other),
    }
    let mut prompted = request;
    prompted.response_format = None;
    super::add_user_text(
        &mut prompted.messages,
        &format!(
            "Reply with exactly one JSON value that matches this JSON Schema, and nothing else (no prose, no code fence):\n{schema}"
        ),
    );
    let outcome = model.chat(prompted, &mut |_| {}, cancel).await?;
    let text = outcome.message.text();
    extract_json(text).map(|value| Structured { value, path: StructuredPath::Prompt }).ok_or_else(|| {
        LlmError::MalformedResponse(format!("no JSON in the answer: {}", text.chars().take(200).collect::<String>()))
    })
}

/// Finds the JSON in a model's text: the whole text, a fenced block, or the
/// first balanced `{...}` / `[...]` that parses; reasoning before it (a
/// `<think>` block, or text up to a bare `</think>`) is never read.
pub fn extract_json(text: &str) -> Option<Value> {
    let (_, answer) = super::think::split_think(text);
    let trimmed = answer.trim();
    if let Ok(v) = serde_json::from_str(trimmed) {
        return Some(v);
    }
    if let Some(inner) = fenced(trimmed) {
        if let Ok(v) = serde_json::from_str(inner.trim()) {
            return Some(v);
        }
    }
    let bytes = trimmed.as_bytes();
    let mut tried = 0;
    for (start, &b) in bytes.iter().enumerate() {
        if b != b'{' && b != b'[' {
            continue;
        }
        tried += 1;
        if tried > 32 {
            break;
        }
        if let Some(end) = balanced_end(&bytes[start..]) {
            if let Ok(v) = serde_json::from_str(&trimmed[start..start + end]) {
                return Some(v);
            }
        }
    }
    None
}

/// The content of the first ``` fence.
fn fenced(text: &str) -> Option<&str> {
    let open = text.find("```")?;
    let after = &text[open + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let close = body.find("```")?;
    Some(&body[..close])
}

/// Length of the balanced bracket group at the start of `bytes`, skipping
/// brackets inside strings.
pub(crate) fn balanced_end(bytes: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_json_from_common_model_habits() {
        let cases = [
            (r#"{"strategy":"writing"}"#, json!({"strategy": "writing"})),
            ("```json\n{\"a\": [1, 2]}\n```", json!({"a": [1, 2]})),
            ("Sure! Here it is: {\"a\": \"}{\"} — hope that helps", json!({"a": "}{"})),
            ("The answer:\n[1, {\"b\": null}]\nDone.", json!([1, {"b": null}])),
            ("noise { not json } then {\"ok\": true}", json!({"ok": true})),
            // A router answer after a think block: the braces in the reasoning are never read.
            (
                "<think>Maybe {\"strategy\": \"chat\"}? No.</think>\n{\"strategy\": \"research\"}",
                json!({"strategy": "research"}),
            ),
            ("I weigh {a} against {b}.\n</think>\n\n{\"strategy\": \"writing\"}", json!({"strategy": "writing"})),
        ];
        for (text, want) in cases {
            assert_eq!(extract_json(text), Some(want), "{text}");
        }
        for text in ["", "no json here", "{\"unterminated\": ", "}{", "[[[["] {
            assert_eq!(extract_json(text), None, "{text}");
        }
    }
}
