//! OpenAI Chat Completions wire types: messages (system, user, assistant with
//! tool calls, tool results), tools with JSON Schema parameters, requests,
//! usage, and the deltas a streamed answer is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json::Fields;

/// One message of a conversation, tagged by `role` as the API expects.
/// Read by hand ([`Message::from_value`]): a derived internally tagged
/// enum buffers every field first and compiled to 11.6 KB of WASM.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
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

crate::decode_by_hand!(Message, |f| Message::from_value(f.0));

impl Message {
    /// The message as serialised (`role` and the fields of its kind).
    pub fn from_value(value: &Value) -> Result<Message, String> {
        let f = Fields(value);
        let content = f.opt_text("content")?;
        let needed = |role: &str| content.clone().ok_or_else(|| format!("a {role} message needs `content`"));
        Ok(match f.text("role", true)?.as_str() {
            "system" => Message::System { content: needed("system")? },
            "user" => Message::User { content: needed("user")? },
            "assistant" => {
                Message::Assistant { content, tool_calls: f.each("tool_calls", false, ToolCall::from_value)? }
            }
            "tool" => Message::Tool {
                content: needed("tool")?,
                tool_call_id: f.opt_text("tool_call_id")?.ok_or("a tool message needs `tool_call_id`")?,
            },
            other => return Err(format!("unknown message role {other:?}")),
        })
    }

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

/// A call the model asks for (read by hand, [`ToolCall::from_value`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
    /// The reasoning the model wrote before the step that made this call
    /// (kept on the step's first call): a server that wants it back with
    /// the calls (DeepSeek's thinking mode) gets it as the assistant
    /// message's `reasoning_content` when [`ChatRequest::echo_reasoning`]
    /// asks; never sent otherwise (see [`ChatRequest::wire_body`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// What the server attached to the call and wants back with it
    /// (Gemini's `extra_content` with its thought signature), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_content: Option<Value>,
}

fn function_kind() -> String {
    "function".into()
}

crate::decode_by_hand!(ToolCall, |f| ToolCall::from_value(f.0));

impl ToolCall {
    /// The call as serialised.
    pub fn from_value(value: &Value) -> Result<ToolCall, String> {
        let f = Fields(value);
        let function = f.object("function")?;
        Ok(ToolCall {
            id: f.text("id", true)?,
            kind: f.opt_text("type")?.unwrap_or_else(function_kind),
            function: FunctionCall { name: function.text("name", true)?, arguments: function.text("arguments", true)? },
            reasoning: f.opt_text("reasoning")?,
            extra_content: f.get("extra_content", false)?.cloned(),
        })
    }
    /// A function call with JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> ToolCall {
        ToolCall::with_arguments(id.into(), name.into(), arguments.to_string())
    }

    /// A function call with its arguments as JSON text.
    pub fn with_arguments(id: String, name: String, arguments: String) -> ToolCall {
        ToolCall {
            id,
            kind: function_kind(),
            function: FunctionCall { name, arguments },
            reasoning: None,
            extra_content: None,
        }
    }

    /// A fresh call id for a call the server sent without one: 9 ASCII
    /// letters and digits, the one shape every server accepts back (Mistral
    /// refuses any other), drawn at random so ids stay unique in a session.
    pub fn fresh_id() -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..9).map(|_| ALPHABET[(crate::platform::random_f64() * 62.0) as usize % 62] as char).collect()
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
    /// Send each assistant message's reasoning back as its
    /// `reasoning_content` (kept on its first call, [`ToolCall::reasoning`]),
    /// for a server that refuses a tool-call turn without it (DeepSeek's
    /// thinking mode: [`super::Refusal::ReasoningRequired`]). Off, no
    /// reasoning is ever sent: most servers refuse the field.
    #[serde(skip)]
    pub echo_reasoning: bool,
}

impl ChatRequest {
    /// A request for `model` with `messages`.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> ChatRequest {
        ChatRequest { model: model.into(), messages, ..ChatRequest::default() }
    }

    /// The JSON body sent upstream: streamed, with the token counts asked
    /// for in the last chunk (the `usage` event).
    pub fn wire_body(&self) -> Result<String, serde_json::Error> {
        // The stable parts first, in this order: the model, the tools, then
        // the append-only messages, so consecutive requests share a long
        // byte-identical prefix (a `Value` alone would sort the keys and put
        // the messages before the tools). Inside each part the keys are
        // sorted, the same way in every request.
        let mut fields = match serde_json::to_value(self)? {
            Value::Object(fields) => fields,
            other => return Ok(other.to_string()),
        };
        fields.insert("stream".into(), Value::Bool(true));
        fields.entry("stream_options").or_insert_with(|| serde_json::json!({ "include_usage": true }));
        // A call's kept reasoning is the message's, on the wire only when asked.
        for message in fields.get_mut("messages").and_then(Value::as_array_mut).into_iter().flatten() {
            let mut reasoning = None;
            for call in message.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(kept) = call.as_object_mut().and_then(|c| c.remove("reasoning")) {
                    reasoning.get_or_insert(kept);
                }
            }
            if let (true, Some(reasoning), Some(message)) = (self.echo_reasoning, reasoning, message.as_object_mut()) {
                message.insert("reasoning_content".into(), reasoning);
            }
        }
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
    /// More of the model's reasoning (`reasoning_content`, `reasoning`, or a
    /// leading `<think>` block): a thought to show apart, never the answer.
    Reasoning { text: String },
    /// Every piece of answer text streamed so far was reasoning after all (a
    /// `</think>` arrived that no `<think>` opened: the server put the
    /// opening tag in the prompt): `text` is all of it, to be taken back
    /// from the answer and shown as a thought. Later reasoning of the same
    /// model streams as [`Delta::Reasoning`] from its first piece.
    WasReasoning { text: String },
    /// More of tool call `index` (its position in the answer, whatever the
    /// server numbered it): its id and name arrive first, then argument text.
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
    /// The assistant message (text and/or tool calls): the answer only,
    /// never the reasoning or a tool call the model wrote as text.
    pub message: Message,
    /// Why the model stopped ("stop", "tool_calls", "length", ...);
    /// "tool_calls" whenever the answer has calls.
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The model's reasoning, when it showed any.
    pub reasoning: Option<String>,
}

impl ChatOutcome {
    /// An answer of plain text.
    pub fn text(text: impl Into<String>) -> ChatOutcome {
        ChatOutcome {
            message: Message::assistant(text),
            finish_reason: Some("stop".into()),
            usage: None,
            reasoning: None,
        }
    }

    /// An answer made of tool calls.
    pub fn tool_calls(calls: Vec<ToolCall>) -> ChatOutcome {
        ChatOutcome {
            message: Message::Assistant { content: None, tool_calls: calls },
            finish_reason: Some("tool_calls".into()),
            usage: None,
            reasoning: None,
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
