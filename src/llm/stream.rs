//! Assembles Chat Completions answers, streamed (`chat.completion.chunk`
//! events) or not, into deltas and one [`ChatOutcome`], in every dialect
//! the servers people run speak:
//!
//! - tool-call deltas without `index` (Gemini), an `index` reused by a new
//!   call with its own id (Ollama sends each parallel call whole at index
//!   0), calls without an id (one is made, the same in the deltas and the
//!   answer), a call whole in one chunk or its arguments split across many,
//!   arguments as a JSON object (kept as its JSON text) or `""` for a tool
//!   without arguments (`{}`), a name or the whole arguments repeated;
//! - chunks with `choices: []` (usage, Azure's `prompt_filter_results`) or
//!   without `delta`, `content` as an array of parts (Mistral's thinking
//!   models), `finish_reason` missing or `"stop"` after tool calls;
//! - an error inside the stream (`{"error": …}`, OpenRouter's
//!   `finish_reason: "error"`) as a coded [`LlmError`];
//! - reasoning in `reasoning_content` (DeepSeek, llama.cpp), `reasoning`
//!   (OpenRouter, vLLM, Ollama) or a leading `<think>` block of the content
//!   (see `think.rs`) as [`Delta::Reasoning`], never in the answer.
//!
//! Tool calls a model writes as text are recognised by a filter composed
//! around the assembler's deltas and answer (`text_calls.rs`).
//!
//! The SSE framing (comments, keep-alives, `data:` without a space, CRLF, a
//! missing `[DONE]`) is [`super::SseDecoder`]'s.

use serde_json::Value;

use super::error::{LlmError, Result};
use super::sse::SseEvent;
use super::think::{Part, ThinkSplit};
use super::types::{ChatOutcome, Delta, Message, ToolCall, Usage};

/// Most tool calls one answer may make.
const MAX_CALLS: usize = 1024;

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    /// The id was made here (a later one from the server replaces it).
    made_id: bool,
    name: String,
    arguments: String,
    extra_content: Option<Value>,
}

/// Collects a streamed answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    /// Which call each wire `index` points at (the latest call given it).
    by_index: Vec<(u64, usize)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    shown: bool,
    think: ThinkSplit,
}

fn malformed(what: &str, e: impl std::fmt::Display) -> LlmError {
    LlmError::MalformedResponse(format!("{what}: {e}"))
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok()
}

impl StreamAssembler {
    /// An empty answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// The model's server writes `<think>` into the prompt (it was seen to
    /// close a think block it never opened): the answer text is reasoning
    /// until `</think>`, streamed as such from the first piece.
    pub fn with_prefilled_think(mut self) -> StreamAssembler {
        self.think = ThinkSplit::prefilled();
        self
    }

    /// Whether a `</think>` came that no `<think>` opened (see
    /// [`StreamAssembler::with_prefilled_think`]).
    pub fn saw_prefilled_think(&self) -> bool {
        self.think.saw_bare_close()
    }

    /// Whether `data: [DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether anything was delivered yet (text, reasoning or a tool call):
    /// a retry would show it twice, so none is made once it has.
    pub fn has_output(&self) -> bool {
        self.shown
    }

    /// Reads one SSE event: `event: error` or an error in its data is the
    /// upstream's error.
    pub fn push_event(&mut self, event: &SseEvent, on_delta: &mut dyn FnMut(Delta)) -> Result<()> {
        if event.event == "error" {
            let value = serde_json::from_str(&event.data).unwrap_or_else(|_| Value::String(event.data.clone()));
            return Err(LlmError::in_band(value.get("error").unwrap_or(&value)));
        }
        self.push(&event.data, on_delta)
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
        let chunk: Value = serde_json::from_str(data).map_err(|e| malformed("a stream chunk is not JSON", e))?;
        self.push_value(&chunk, on_delta)
    }

    /// Reads one chunk (or a whole answer: its `message` is read as a delta).
    fn push_value(&mut self, chunk: &Value, on_delta: &mut dyn FnMut(Delta)) -> Result<()> {
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(LlmError::in_band(error));
        }
        self.usage = Usage::read(chunk, self.usage);
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        match choice.get("finish_reason").and_then(Value::as_str) {
            Some("error") => {
                let message = "the model's answer ended with an error".into();
                return Err(LlmError::UpstreamUnavailable { status: None, message });
            }
            Some(reason) if !reason.is_empty() => self.finish_reason = Some(reason.to_owned()),
            _ => {}
        }
        if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")).filter(|d| d.is_object()) {
            let reasoning = delta.get("reasoning_content").or_else(|| delta.get("reasoning"));
            if let Some(text) = reasoning.and_then(Value::as_str) {
                self.reasoning_piece(text, on_delta);
            }
            match delta.get("content") {
                Some(Value::String(text)) => self.text(text, on_delta),
                Some(Value::Array(parts)) => {
                    for part in parts {
                        let text = |key| part.get(key).and_then(Value::as_str).unwrap_or_default();
                        match part.get("type").and_then(Value::as_str) {
                            Some("text") => self.text(text("text"), on_delta),
                            Some("thinking") => match part.get("thinking") {
                                Some(Value::Array(inner)) => {
                                    for piece in inner.iter().filter_map(|p| p.get("text")?.as_str()) {
                                        self.reasoning_piece(piece, on_delta);
                                    }
                                }
                                _ => self.reasoning_piece(text("thinking"), on_delta),
                            },
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                self.call_piece(call, on_delta)?;
            }
        }
        Ok(())
    }

    fn reasoning_piece(&mut self, text: &str, on_delta: &mut dyn FnMut(Delta)) {
        if !text.is_empty() {
            self.reasoning.push_str(text);
            self.shown = true;
            on_delta(Delta::Reasoning { text: text.to_owned() });
        }
    }

    /// Answer text: reasoning split off, possible calls held back.
    fn text(&mut self, text: &str, on_delta: &mut dyn FnMut(Delta)) {
        let mut think = std::mem::take(&mut self.think);
        think.push(text, &mut |part| self.sort(part, on_delta));
        self.think = think;
    }

    fn sort(&mut self, part: Part, on_delta: &mut dyn FnMut(Delta)) {
        match part {
            Part::Text(text) => {
                self.content.push_str(&text);
                self.shown = true;
                on_delta(Delta::Text { text });
            }
            Part::Reasoning(text) => self.reasoning_piece(&text, on_delta),
            Part::WasReasoning(before) => {
                // All the answer text so far.
                let mut text = std::mem::take(&mut self.content);
                text.push_str(&before);
                self.reasoning.push_str(&text);
                self.shown = true;
                on_delta(Delta::WasReasoning { text });
            }
        }
    }

    /// One entry of a delta's `tool_calls`.
    fn call_piece(&mut self, call: &Value, on_delta: &mut dyn FnMut(Delta)) -> Result<()> {
        let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let wire = call.get("index").and_then(Value::as_u64);
        let function = call.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).filter(|n| !n.is_empty());
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            None | Some(Value::Null) => String::new(),
            Some(object) => object.to_string(),
        };
        // The call this piece continues, if any: the one with its id, else
        // the one its index points at (without an index, the last one).
        let known = match wire {
            Some(wire) => self.by_index.iter().rev().find(|(i, _)| *i == wire).map(|&(_, at)| at),
            None => self.calls.len().checked_sub(1),
        };
        let continues = |c: &PartialCall| match (id, name) {
            // A new id is a new call, unless the one there has an id made here.
            (Some(id), name) => c.id == id || c.made_id && name.is_none_or(|n| n == c.name),
            // No id: a name on a call whose arguments are complete starts a
            // new call; while they stream it is the name again, or its rest.
            (None, Some(_)) => c.name.is_empty() || !is_json(&c.arguments),
            (None, None) => true,
        };
        let by_id = id.and_then(|id| self.calls.iter().position(|c| c.id == id));
        let at = match by_id.or(known.filter(|&at| continues(&self.calls[at]))) {
            Some(at) => at,
            None => {
                if self.calls.len() >= MAX_CALLS {
                    return Err(LlmError::MalformedResponse("more than 1024 tool calls".into()));
                }
                self.calls.push(PartialCall { id: ToolCall::fresh_id(), made_id: true, ..PartialCall::default() });
                self.calls.len() - 1
            }
        };
        if let Some(wire) = wire {
            self.by_index.retain(|(i, _)| *i != wire);
            self.by_index.push((wire, at));
        }
        let slot = &mut self.calls[at];
        let mut new_id = slot.made_id && slot.name.is_empty() && slot.arguments.is_empty();
        if let Some(id) = id.filter(|id| *id != slot.id) {
            slot.id = id.to_owned();
            slot.made_id = false;
            new_id = true;
        }
        let name = name.filter(|n| *n != slot.name).map(|n| {
            slot.name.push_str(n);
            n.to_owned()
        });
        slot.arguments.push_str(&arguments);
        if let Some(extra) = call.get("extra_content").filter(|e| !e.is_null()) {
            slot.extra_content = Some(extra.clone());
        }
        if new_id || name.is_some() || !arguments.is_empty() {
            self.shown = true;
            on_delta(Delta::ToolCall { index: at, id: new_id.then(|| slot.id.clone()), name, arguments });
        }
        Ok(())
    }

    /// The finished answer.
    pub fn finish(self) -> Result<ChatOutcome> {
        self.finish_with(&mut |_| {})
    }

    /// The finished answer; what was held back (a split tag, text that might
    /// have been a call) is delivered to `on_delta` first.
    pub fn finish_with(mut self, on_delta: &mut dyn FnMut(Delta)) -> Result<ChatOutcome> {
        let mut think = std::mem::take(&mut self.think);
        think.finish(&mut |part| self.sort(part, on_delta));
        // Neither a finish reason nor `[DONE]`, and a call cut off: the
        // connection ended in the middle of the answer.
        let ended = self.done || self.finish_reason.is_some();
        if !ended && self.calls.iter().any(|c| !c.arguments.trim().is_empty() && !is_json(&c.arguments)) {
            return Err(LlmError::MalformedResponse("the answer was cut off in the middle of a tool call".into()));
        }
        let reasoning = (!self.reasoning.trim().is_empty()).then_some(self.reasoning);
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(LlmError::MalformedResponse("a tool call has no name".into()));
            }
            let arguments = if call.arguments.trim().is_empty() { "{}".to_owned() } else { call.arguments };
            let mut call_out = ToolCall::with_arguments(call.id, call.name, arguments);
            call_out.extra_content = call.extra_content;
            if i == 0 {
                call_out.reasoning.clone_from(&reasoning);
            }
            tool_calls.push(call_out);
        }
        let mut finish_reason = self.finish_reason;
        if !tool_calls.is_empty() && matches!(finish_reason.as_deref(), None | Some("stop")) {
            finish_reason = Some("tool_calls".into());
        }
        let content = (!self.content.is_empty()).then_some(self.content);
        Ok(ChatOutcome {
            message: Message::Assistant { content, tool_calls },
            finish_reason,
            usage: self.usage,
            reasoning,
        })
    }
}

/// Reads a non-streamed `chat.completion` body.
pub fn parse_completion(body: &str) -> Result<ChatOutcome> {
    parse_completion_with(body, StreamAssembler::new())
}

/// Reads a non-streamed `chat.completion` body with `assembler`'s settings
/// (see [`StreamAssembler::with_prefilled_think`]).
pub fn parse_completion_with(body: &str, mut assembler: StreamAssembler) -> Result<ChatOutcome> {
    let value: Value = serde_json::from_str(body).map_err(|e| malformed("the answer is not JSON", e))?;
    if value.get("error").is_none_or(Value::is_null) {
        let choice = value
            .pointer("/choices/0")
            .ok_or_else(|| LlmError::MalformedResponse("the answer has no choices".into()))?;
        if !choice.get("message").is_some_and(Value::is_object) {
            return Err(LlmError::MalformedResponse("the answer has no message".into()));
        }
    }
    assembler.push_value(&value, &mut |_| {})?;
    assembler.done = true;
    assembler.finish()
}

#[cfg(test)]
#[path = "stream_dialects.rs"]
mod dialects;
