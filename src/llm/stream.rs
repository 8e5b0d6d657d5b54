//! Assembles Chat Completions answers: streamed chunks (`chat.completion.chunk`
//! events) into deltas and a final message, and non-streamed bodies into
//! the same [`ChatOutcome`].

use serde_json::Value;

use super::error::{LlmError, Result};
use super::types::{ChatOutcome, Delta, FunctionCall, Message, ToolCall, Usage};

#[derive(Debug, Default, Clone)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Collects a streamed answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    content: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamAssembler {
    /// An empty answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// Whether `data: [DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether any text or tool call arrived yet.
    pub fn has_output(&self) -> bool {
        !self.content.is_empty() || !self.calls.is_empty()
    }

    /// Reads one event's data, passing its deltas to `on_delta`.
    pub fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(Delta)) -> Result<()> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::MalformedResponse(format!("a stream chunk is not JSON: {e}")))?;
        if let Some(error) = chunk.get("error") {
            let message = error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_owned);
            return Err(LlmError::UpstreamUnavailable { status: None, message });
        }
        self.usage = Usage::read(&chunk, self.usage);
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.content.push_str(text);
            on_delta(Delta::Text { text: text.to_owned() });
        }
        for (position, call) in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let index = call.get("index").and_then(Value::as_u64).map_or(position, |i| i as usize);
            if index > 1024 {
                return Err(LlmError::MalformedResponse(format!("tool call index {index} is out of range")));
            }
            if self.calls.len() <= index {
                self.calls.resize(index + 1, PartialCall::default());
            }
            let slot = &mut self.calls[index];
            let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
            let name = call.pointer("/function/name").and_then(Value::as_str).map(str::to_owned);
            let arguments = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("").to_owned();
            if let Some(id) = &id {
                slot.id.clone_from(id);
            }
            if let Some(name) = &name {
                slot.name.push_str(name);
            }
            slot.arguments.push_str(&arguments);
            on_delta(Delta::ToolCall { index, id, name, arguments });
        }
        Ok(())
    }

    /// The finished answer.
    pub fn finish(self) -> Result<ChatOutcome> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(LlmError::MalformedResponse(format!("tool call {i} has no name")));
            }
            let id = if call.id.is_empty() { format!("call_{i}") } else { call.id };
            tool_calls.push(ToolCall {
                id,
                kind: "function".into(),
                function: FunctionCall { name: call.name, arguments: call.arguments },
            });
        }
        let content = (!self.content.is_empty()).then_some(self.content);
        Ok(ChatOutcome {
            message: Message::Assistant { content, tool_calls },
            finish_reason: self.finish_reason,
            usage: self.usage,
        })
    }
}

/// Reads a non-streamed `chat.completion` body.
pub fn parse_completion(body: &str) -> Result<ChatOutcome> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| LlmError::MalformedResponse(format!("the answer is not JSON: {e}")))?;
    let choice =
        value.pointer("/choices/0").ok_or_else(|| LlmError::MalformedResponse("the answer has no choices".into()))?;
    let message = choice
        .get("message")
        .cloned()
        .ok_or_else(|| LlmError::MalformedResponse("the answer has no message".into()))?;
    let mut message: Message = crate::json::from_value(message)
        .map_err(|e| LlmError::MalformedResponse(format!("the answer's message is not readable: {e}")))?;
    if let Message::Assistant { content, .. } = &mut message {
        if content.as_deref() == Some("") {
            *content = None;
        }
    }
    Ok(ChatOutcome {
        message,
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
        usage: Usage::read(&value, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_tool_call_deltas_assemble() {
        let mut asm = StreamAssembler::new();
        let mut deltas = Vec::new();
        let events = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"look."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"web_search","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"rust\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#,
            "[DONE]",
        ];
        for e in events {
            asm.push(e, &mut |d| deltas.push(d)).unwrap();
        }
        assert!(asm.is_done());
        assert_eq!(deltas.len(), 5);
        let outcome = asm.finish().unwrap();
        assert_eq!(outcome.message.text(), "Let me look.");
        let call = &outcome.message.tool_calls()[0];
        assert_eq!((call.id.as_str(), call.function.name.as_str()), ("call_a", "web_search"));
        assert_eq!(call.function.arguments, "{\"query\":\"rust\"}");
        assert_eq!(outcome.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(outcome.usage.unwrap().total_tokens, 12);
        assert_eq!(outcome.usage.unwrap().cached_tokens, 0);
    }

    #[test]
    fn garbage_is_a_malformed_response_not_a_panic() {
        let mut asm = StreamAssembler::new();
        assert_eq!(asm.push("{not json", &mut |_| {}).unwrap_err().code(), "malformed_response");
        assert_eq!(
            asm.push(r#"{"error":{"message":"overloaded"}}"#, &mut |_| {}).unwrap_err().code(),
            "upstream_unavailable"
        );
        assert_eq!(parse_completion("[]").unwrap_err().code(), "malformed_response");
        let nameless = {
            let mut a = StreamAssembler::new();
            a.push(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
                &mut |_| {},
            )
            .unwrap();
            a.finish()
        };
        assert_eq!(nameless.unwrap_err().code(), "malformed_response");
    }

    #[test]
    fn non_streamed_completion_parses() {
        let o = parse_completion(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert_eq!(o.message.text(), "hi");
    }
}

#[cfg(test)]
mod usage_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cached_tokens_from_openai_and_llama_cpp() {
        let openai = json!({"usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
                                      "prompt_tokens_details": {"cached_tokens": 64}}});
        let u = Usage::read(&openai, None).unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens, u.cached_tokens), (100, 5, 64));
        let llama = json!({"choices": [], "timings": {"cache_n": 90, "prompt_n": 10, "predicted_n": 7}});
        let u = Usage::read(&llama, None).unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens, u.cached_tokens), (100, 7, 90));
        assert_eq!(Usage::read(&json!({"tokens_cached": 12}), None).unwrap().cached_tokens, 12);
        assert_eq!(Usage::read(&json!({"choices": []}), None), None);
    }
}
