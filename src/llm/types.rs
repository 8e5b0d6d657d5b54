//! OpenAI Chat Completions wire types: messages (system, user, assistant with
//! tool calls, tool results), tools with JSON Schema parameters, requests,
//! usage, and the deltas a streamed answer is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation, tagged by `role` as the API expects.
/// Read through [`RawMessage`]: a derived internally tagged enum buffers
/// every field first and compiled to 11.6 KB of WASM; the flat struct
/// reads in one pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase", try_from = "RawMessage")]
pub enum Message {
    /// Instructions for the model.
    System { content: String },
    /// What the person (or injected context) says.
    User { content: String },
    /// The model's answer: text, tool calls, or both.
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result, answering one tool call.
    Tool { tool_call_id: String, content: String },
}

/// A message as it arrives, every field optional (see [`Message`]).
#[derive(Deserialize)]
pub struct RawMessage {
    role: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

impl TryFrom<RawMessage> for Message {
    type Error = String;

    fn try_from(raw: RawMessage) -> Result<Message, String> {
        let content = |role: &str| raw.content.clone().ok_or_else(|| format!("a {role} message needs `content`"));
        Ok(match raw.role.as_str() {
            "system" => Message::System { content: content("system")? },
            "user" => Message::User { content: content("user")? },
            "assistant" => Message::Assistant { content: raw.content, tool_calls: raw.tool_calls.unwrap_or_default() },
            "tool" => Message::Tool {
                content: content("tool")?,
                tool_call_id: raw.tool_call_id.ok_or("a tool message needs `tool_call_id`")?,
            },
            other => return Err(format!("unknown message role {other:?}")),
        })
    }
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::System { content: content.into() }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::User { content: content.into() }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::Assistant { content: Some(content.into()), tool_calls: Vec::new() }
    }

    /// A tool result.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message::Tool { tool_call_id: tool_call_id.into(), content: content.into() }
    }

    /// The message's text (empty when it has none).
    pub fn text(&self) -> &str {
        match self {
            Message::System { content } | Message::User { content } | Message::Tool { content, .. } => content,
            Message::Assistant { content, .. } => content.as_deref().unwrap_or(""),
        }
    }

    /// The tool calls of an assistant message (empty otherwise).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }
}

/// Adds `text` to the request's last user message (after a blank line), or
/// as a new user message when the last message is not the person's: extra
/// instructions never become a second `system` message, which strict chat
/// templates (llama.cpp, some Ollama models) refuse after a user turn.
pub fn add_user_text(messages: &mut Vec<Message>, text: &str) {
    match messages.last_mut() {
        Some(Message::User { content }) => {
            content.push_str("\n\n");
            content.push_str(text);
        }
        _ => messages.push(Message::user(text)),
    }
}

/// The messages with no two consecutive ones of the same role (tool results
/// excepted: one per call): consecutive user (or system) messages are
/// joined with a blank line, consecutive assistant messages become one (text
/// joined, tool calls kept in order). Strict chat templates require this.
pub fn alternate(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match (out.last_mut(), message) {
            (Some(Message::User { content }), Message::User { content: more })
            | (Some(Message::System { content }), Message::System { content: more }) => {
                content.push_str("\n\n");
                content.push_str(&more);
            }
            (
                Some(Message::Assistant { content, tool_calls }),
                Message::Assistant { content: more, tool_calls: more_calls },
            ) => {
                if let Some(more) = more.filter(|m| !m.is_empty()) {
                    match content {
                        Some(text) if !text.is_empty() => {
                            text.push_str("\n\n");
                            text.push_str(&more);
                        }
                        _ => *content = Some(more),
                    }
                }
                tool_calls.extend(more_calls);
            }
            (_, message) => out.push(message),
        }
    }
    out
}

/// What a strict chat template refuses in `messages`: a `system` message
/// anywhere but first, or two consecutive messages of the same role (tool
/// results excepted). `None` when the request is well-formed.
pub fn template_violation(messages: &[Message]) -> Option<String> {
    let role = |m: &Message| match m {
        Message::System { .. } => "system",
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool { .. } => "tool",
    };
    for (i, m) in messages.iter().enumerate() {
        if i > 0 && role(m) == "system" {
            return Some(format!("message {i} is a system message after the first"));
        }
        if i > 0 && role(m) != "tool" && role(m) == role(&messages[i - 1]) {
            return Some(format!("messages {} and {i} are both {}", i - 1, role(m)));
        }
    }
    None
}

/// A call the model asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".into()
}

impl ToolCall {
    /// A function call with JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall { name: name.into(), arguments: arguments.to_string() },
        }
    }
}

/// The function part of a tool call: its name and JSON-encoded arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the model wrote it (it may be malformed).
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionSpec,
}

/// Name, description and JSON Schema of a tool's arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolSpec {
    /// A function tool.
    pub fn function(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> ToolSpec {
        ToolSpec {
            kind: function_kind(),
            function: FunctionSpec { name: name.into(), description: description.into(), parameters },
        }
    }
}

/// A Chat Completions request. `model` may be an alias ("main", "sub") that
/// the proxy maps to a configured model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChatRequest {
    pub model: String,
    /// Before the messages: serialised in field order, the stable parts of
    /// a request (model, tools, then the append-only messages) come first,
    /// so consecutive requests share a long byte-identical prefix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Ask for token usage in the last streamed chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
}

impl ChatRequest {
    /// A request for `model` with `messages`.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> ChatRequest {
        ChatRequest { model: model.into(), messages, ..ChatRequest::default() }
    }

    /// The JSON body sent upstream: streamed, with the token counts asked
    /// for in the last chunk (the `usage` event).
    pub fn wire_body(mut self) -> Result<String, serde_json::Error> {
        self.stream = true;
        self.stream_options.get_or_insert_with(|| serde_json::json!({ "include_usage": true }));
        // The stable parts first, in this order: the model, the tools, then
        // the append-only messages, so consecutive requests share a long
        // byte-identical prefix (a `Value` alone would sort the keys and put
        // the messages before the tools). Inside each part the keys are
        // sorted, the same way in every request.
        let mut fields = match serde_json::to_value(&self)? {
            Value::Object(fields) => fields,
            other => return Ok(other.to_string()),
        };
        let mut body = String::from("{");
        let ordered = ["model", "tools", "messages"].into_iter().filter_map(|k| fields.remove_entry(k));
        for (key, value) in ordered.collect::<Vec<_>>().into_iter().chain(fields) {
            if body.len() > 1 {
                body.push(',');
            }
            body.push_str(&Value::String(key).to_string());
            body.push(':');
            body.push_str(&value.to_string());
        }
        body.push('}');
        Ok(body)
    }
}

/// Token counts reported by the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    /// Prompt tokens the upstream served from its prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    /// Reads the usage a reply (or a streamed chunk) reports, adding to
    /// `known`: OpenAI's `usage` (with `prompt_tokens_details.cached_tokens`),
    /// llama.cpp's `timings` (`cache_n`, `prompt_n`, `predicted_n`) and
    /// older `tokens_cached`. `None` when the reply reports none.
    pub fn read(reply: &Value, known: Option<Usage>) -> Option<Usage> {
        let number = |v: Option<&Value>| v.and_then(Value::as_u64);
        let mut usage = known.unwrap_or_default();
        let mut seen = known.is_some();
        if let Some(u) = reply.get("usage").filter(|u| u.is_object()) {
            usage.prompt_tokens = number(u.get("prompt_tokens")).unwrap_or(usage.prompt_tokens);
            usage.completion_tokens = number(u.get("completion_tokens")).unwrap_or(usage.completion_tokens);
            usage.total_tokens = number(u.get("total_tokens")).unwrap_or(usage.prompt_tokens + usage.completion_tokens);
            if let Some(cached) = number(u.pointer("/prompt_tokens_details/cached_tokens")) {
                usage.cached_tokens = cached;
            }
            seen = true;
        }
        if let Some(t) = reply.get("timings").filter(|t| t.is_object()) {
            let cached = number(t.get("cache_n")).unwrap_or(0);
            usage.cached_tokens = usage.cached_tokens.max(cached);
            if usage.prompt_tokens == 0 {
                usage.prompt_tokens = number(t.get("prompt_n")).unwrap_or(0) + cached;
                usage.completion_tokens = number(t.get("predicted_n")).unwrap_or(usage.completion_tokens);
                usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
            }
            seen = true;
        }
        if let Some(cached) = number(reply.get("tokens_cached")) {
            usage.cached_tokens = usage.cached_tokens.max(cached);
            seen = true;
        }
        seen.then_some(usage)
    }
}

/// A piece of a streamed answer, delivered as soon as it arrives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Delta {
    /// More answer text.
    Text { text: String },
    /// More of tool call `index`: its id and name arrive first, then argument text.
    ToolCall {
        index: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments: String,
    },
}

/// A finished answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatOutcome {
    /// The assistant message (text and/or tool calls).
    pub message: Message,
    /// Why the model stopped ("stop", "tool_calls", "length", ...).
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

impl ChatOutcome {
    /// An answer of plain text.
    pub fn text(text: impl Into<String>) -> ChatOutcome {
        ChatOutcome { message: Message::assistant(text), finish_reason: Some("stop".into()), usage: None }
    }

    /// An answer made of tool calls.
    pub fn tool_calls(calls: Vec<ToolCall>) -> ChatOutcome {
        ChatOutcome {
            message: Message::Assistant { content: None, tool_calls: calls },
            finish_reason: Some("tool_calls".into()),
            usage: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_back_and_bad_ones_are_named() {
        let call = ToolCall::new("c1", "web_search", &json!({"query": "q"}));
        for message in [
            Message::system("s"),
            Message::user("u"),
            Message::assistant("a"),
            Message::Assistant { content: None, tool_calls: vec![call] },
            Message::tool("c1", "result"),
        ] {
            let back: Message = crate::json::from_value(serde_json::to_value(&message).unwrap()).unwrap();
            assert_eq!(back, message);
        }
        let null_content: Message = crate::json::from_value(json!({"role": "assistant", "content": null})).unwrap();
        assert_eq!(null_content, Message::Assistant { content: None, tool_calls: Vec::new() });
        for (bad, says) in [
            (json!({"role": "user"}), "needs `content`"),
            (json!({"role": "tool", "content": "x"}), "needs `tool_call_id`"),
            (json!({"role": "wizard", "content": "x"}), "unknown message role"),
            (json!({"content": "x"}), "role"),
        ] {
            let err = crate::json::from_value::<Message>(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn messages_use_the_openai_wire_shape() {
        let call = ToolCall::new("call_1", "web_search", &json!({"query": "x"}));
        let messages = vec![
            Message::system("s"),
            Message::user("u"),
            Message::Assistant { content: None, tool_calls: vec![call] },
            Message::tool("call_1", "result"),
        ];
        let wire = serde_json::to_value(&messages).unwrap();
        assert_eq!(
            wire,
            json!([
                {"role": "system", "content": "s"},
                {"role": "user", "content": "u"},
                {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": "{\"query\":\"x\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "result"}
            ])
        );
        let back: Vec<Message> = crate::json::from_value(wire).unwrap();
        assert_eq!(back, messages);
    }

    #[test]
    fn assistant_with_null_content_parses() {
        let m: Message =
            crate::json::from_value(json!({"role": "assistant", "content": null, "tool_calls": []})).unwrap();
        assert_eq!(m.text(), "");
    }
}

#[cfg(test)]
mod template_tests {
    use super::*;

    #[test]
    fn extra_instructions_join_the_last_user_message_never_a_second_system_one() {
        let mut messages = vec![Message::system("s"), Message::user("u")];
        add_user_text(&mut messages, "reply with JSON");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].text(), "u\n\nreply with JSON");
        let mut after_tools = vec![Message::system("s"), Message::user("u"), Message::tool("c", "r")];
        add_user_text(&mut after_tools, "context");
        assert!(matches!(after_tools.last(), Some(Message::User { content }) if content == "context"));
        assert_eq!(template_violation(&after_tools), None);
    }

    #[test]
    fn alternation_joins_what_strict_templates_refuse() {
        let call = ToolCall::new("c", "t", &serde_json::json!({}));
        let messages = vec![
            Message::system("a"),
            Message::user("b"),
            Message::user("c"),
            Message::assistant("d"),
            Message::Assistant { content: None, tool_calls: vec![call.clone()] },
            Message::tool("c", "r1"),
            Message::tool("c2", "r2"),
        ];
        assert!(template_violation(&messages).unwrap().contains("both user"));
        let fixed = alternate(messages);
        assert_eq!(template_violation(&fixed), None);
        assert_eq!(fixed[1].text(), "b\n\nc");
        assert_eq!((fixed[2].text(), fixed[2].tool_calls()), ("d", std::slice::from_ref(&call)));
        assert_eq!(fixed.len(), 5, "tool results stay one per call");
        assert!(template_violation(&[Message::user("u"), Message::system("late")]).unwrap().contains("system"));
    }
}
