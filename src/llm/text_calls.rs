//! Tool calls a model writes as text, when its server has no tool parser
//! for it: Hermes/Qwen `<tool_call>{"name": …, "arguments": …}</tool_call>`,
//! Mistral `[TOOL_CALLS][{…}, …]`, Llama 3.1 `<|python_tag|>{"name": …,
//! "parameters": …}` (several joined by `;`), and a bare
//! `{"name": …, "parameters": …}` (or an array of them) that is the whole
//! answer. One scanner reads them all: a marker, then the JSON that follows
//! it (a call, or an array of calls), then the marker's closing token.
//!
//! Only a call of an offered tool with object arguments counts. A marker
//! inside a fenced code block, an unknown tool name, JSON that does not
//! parse, or a call-shaped object inside prose (a code sample in an answer
//! about JSON) leaves the text as it is. [`TextCallGuard`] holds back the
//! streamed text that may become a call, so a call is never shown as the
//! answer: from a marker on (a fenced sample with one is shown when the
//! answer ends), or an answer that opens like a bare call. Not read: the
//! formats of Mistral's v11 tokenizer (`name[ARGS]{…}`) and Qwen3-Coder's
//! XML calls, whose servers ship parsers for them.

use serde_json::Value;

use super::error::Result;
use super::model::ChatModel;
use super::structured::balanced_end;
use super::types::{ChatOutcome, ChatRequest, Delta, Message, ToolCall};
use crate::cancel::CancelToken;

/// The markers that open written calls, and what may close them.
const MARKERS: [&str; 3] = ["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"];
const CLOSERS: [&str; 3] = ["</tool_call>", "<|eom_id|>", "<|eot_id|>"];

/// The tool calls written in `text` and the answer text without them, or
/// `None` when `text` holds no call of the `tools` offered.
pub fn split_text_calls(text: &str, tools: &[String]) -> Option<(String, Vec<ToolCall>)> {
    split_from(text, 0, tools)
}

/// [`split_text_calls`] of `text[from..]`, the text before it already shown
/// (it still says whether a marker is inside a fenced block).
fn split_from(text: &str, from: usize, tools: &[String]) -> Option<(String, Vec<ToolCall>)> {
    if let Some(calls) = parse_calls(text.trim(), tools, true) {
        return Some((String::new(), calls));
    }
    let (mut rest, mut calls, mut pos) = (String::new(), Vec::new(), from);
    while let Some((at, marker)) = next_marker(text, pos) {
        rest.push_str(&text[pos..at]);
        let mut end = at + marker.len();
        let mut found = Vec::new();
        // One JSON value, or several joined by `;` (Llama 3.1).
        while let Some((start, stop)) = json_at(text, end) {
            match parse_calls(&text[start..stop], tools, false) {
                Some(more) => found.extend(more),
                None => break,
            }
            end = stop;
        }
        let after = end + skip_space(&text.as_bytes()[end..], b"");
        if let Some(closer) = CLOSERS.iter().find(|c| text[after..].starts_with(**c)) {
            end = after + closer.len();
        }
        if found.is_empty() {
            rest.push_str(&text[at..end]);
        }
        calls.append(&mut found);
        pos = end;
    }
    if calls.is_empty() {
        return None;
    }
    rest.push_str(&text[pos..]);
    Some((rest.trim().to_owned(), calls))
}

/// How many bytes of white space (or of `also`) open `bytes`.
fn skip_space(bytes: &[u8], also: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_whitespace() || also.contains(b)).count()
}

/// The JSON object or array after white space and `;` at `text[at..]`:
/// where it starts and ends.
fn json_at(text: &str, at: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let start = at + skip_space(&bytes[at..], b";");
    if !matches!(bytes.get(start), Some(b'{' | b'[')) {
        return None;
    }
    Some((start, start + balanced_end(&bytes[start..])?))
}

/// The first marker at or after `from` that is not inside a fenced code block.
fn next_marker(text: &str, from: usize) -> Option<(usize, &'static str)> {
    let mut from = from;
    loop {
        let (at, marker) = MARKERS.iter().filter_map(|m| Some((from + text[from..].find(m)?, *m))).min()?;
        if text[..at].matches("```").count() % 2 == 0 {
            return Some((at, marker));
        }
        from = at + marker.len();
    }
}

/// The calls of the JSON `text`: one call, or an array of them (all of
/// offered tools); a bare call must carry its arguments key, so a JSON
/// answer that merely names a tool is not one.
fn parse_calls(text: &str, tools: &[String], bare: bool) -> Option<Vec<ToolCall>> {
    let value: Value = serde_json::from_str(text).ok()?;
    let items = match &value {
        Value::Array(items) => items.as_slice(),
        Value::Object(_) => std::slice::from_ref(&value),
        _ => return None,
    };
    let mut calls = Vec::new();
    for item in items {
        calls.push(call_of(item, tools, bare)?);
    }
    (!calls.is_empty()).then_some(calls)
}

/// `{"name", "arguments" | "parameters"}`, also wrapped as `{"type":
/// "function", "function": {…}}`; arguments as an object or the JSON text
/// of one (none: a tool without arguments, unless `needs_arguments`).
fn call_of(value: &Value, tools: &[String], needs_arguments: bool) -> Option<ToolCall> {
    let call = value.get("function").filter(|f| f.is_object()).unwrap_or(value);
    let name = call.get("name")?.as_str()?;
    if !tools.iter().any(|t| t == name) {
        return None;
    }
    let arguments = match call.get("arguments").or_else(|| call.get("parameters")) {
        Some(Value::String(text)) => serde_json::from_str(text).ok()?,
        Some(other) => other.clone(),
        None if !needs_arguments => Value::Object(Default::default()),
        None => return None,
    };
    if !arguments.is_object() {
        return None;
    }
    let id = value.get("id").and_then(Value::as_str).map_or_else(ToolCall::fresh_id, str::to_owned);
    Some(ToolCall::with_arguments(id, name.to_owned(), arguments.to_string()))
}

/// Recognises tool calls written as text in an answer. Put between an
/// answer's deltas and their consumer ([`TextCallFilter::delta`]), it holds
/// back the streamed text that may become a call; [`TextCallFilter::finish`]
/// then moves the calls out of the finished answer's text (when the answer
/// has no calls of its own) and delivers what was held that is no call.
///
/// ```
/// # use atelier_agent::llm::{ChatOutcome, Delta, TextCallFilter};
/// let mut filter = TextCallFilter::new(vec!["web_search".into()]);
/// let mut shown = String::new();
/// let text = "Let me look.\n<tool_call>{\"name\": \"web_search\", \"arguments\": {\"query\": \"kyoto\"}}</tool_call>";
/// for piece in [&text[..20], &text[20..]] {
///     filter.delta(Delta::Text { text: piece.into() }, &mut |d| if let Delta::Text { text } = d { shown.push_str(&text) });
/// }
/// let outcome = filter.finish(ChatOutcome::text(text), &mut |_| {});
/// assert_eq!(shown, "Let me look.\n");
/// assert_eq!(outcome.message.tool_calls()[0].function.name, "web_search");
/// assert_eq!(outcome.finish_reason.as_deref(), Some("tool_calls"));
/// ```
#[derive(Debug)]
pub struct TextCallFilter {
    tools: Vec<String>,
    held: String,
    /// Bytes of answer text passed on.
    shown: usize,
    /// Everything from here on is held until the answer ends.
    holding: bool,
}

impl TextCallFilter {
    /// A filter for the tools offered (their names).
    pub fn new(tools: Vec<String>) -> TextCallFilter {
        TextCallFilter { tools, held: String::new(), shown: 0, holding: false }
    }

    /// A filter for the tools `request` offers.
    pub fn for_request(request: &ChatRequest) -> TextCallFilter {
        TextCallFilter::new(request.tools.iter().map(|t| t.function.name.clone()).collect())
    }

    /// Passes `delta` on to `out`, holding back answer text that may become a call.
    pub fn delta(&mut self, delta: Delta, out: &mut dyn FnMut(Delta)) {
        match delta {
            Delta::Text { text } => {
                let text = self.push(&text);
                if !text.is_empty() {
                    self.shown += text.len();
                    out(Delta::Text { text });
                }
            }
            Delta::WasReasoning { text } => {
                // The answer so far was reasoning: nothing is held, nothing shown.
                *self = TextCallFilter::new(std::mem::take(&mut self.tools));
                out(Delta::WasReasoning { text });
            }
            other => out(other),
        }
    }

    fn push(&mut self, text: &str) -> String {
        self.held.push_str(text);
        if self.holding {
            return String::new();
        }
        if self.shown == 0 {
            // An answer that opens with an object (or an array of them) may
            // be a bare call: held whole (a JSON answer shows when it ends).
            let bytes = self.held.as_bytes();
            let start = skip_space(bytes, b"");
            let second = start + 1 + skip_space(&bytes[(start + 1).min(bytes.len())..], b"");
            match (bytes.get(start), bytes.get(second)) {
                (None, _) | (Some(b'['), None) => return String::new(),
                (Some(b'{'), _) | (Some(b'['), Some(b'{')) => {
                    self.holding = true;
                    return String::new();
                }
                _ => {}
            }
        }
        let ready = match MARKERS.iter().filter_map(|m| self.held.find(m)).min() {
            Some(at) => {
                self.holding = true;
                at
            }
            None => {
                self.held.len() - MARKERS.iter().map(|m| super::think::partial_tag(&self.held, m)).max().unwrap_or(0)
            }
        };
        let rest = self.held.split_off(ready);
        std::mem::replace(&mut self.held, rest)
    }

    /// The finished answer, with the calls written in its text as its calls;
    /// the held text that is no call, or that follows the calls, is passed
    /// to `out` first.
    pub fn finish(&mut self, mut outcome: ChatOutcome, out: &mut dyn FnMut(Delta)) -> ChatOutcome {
        let held = std::mem::take(&mut self.held);
        let Message::Assistant { content, tool_calls } = &mut outcome.message else {
            return outcome;
        };
        let text = content.take().unwrap_or_default();
        let shown = (0..=self.shown.min(text.len())).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
        let found = split_from(&text, shown, &self.tools).filter(|_| tool_calls.is_empty());
        let kept = match found {
            Some((rest, calls)) => {
                for (index, call) in calls.iter().enumerate() {
                    let (id, name) = (Some(call.id.clone()), Some(call.function.name.clone()));
                    out(Delta::ToolCall { index, id, name, arguments: call.function.arguments.clone() });
                }
                tool_calls.extend(calls);
                if let Some(first) = tool_calls.first_mut() {
                    first.reasoning.clone_from(&outcome.reasoning);
                }
                if matches!(outcome.finish_reason.as_deref(), None | Some("stop")) {
                    outcome.finish_reason = Some("tool_calls".into());
                }
                if !rest.is_empty() {
                    out(Delta::Text { text: rest.clone() });
                }
                [&text[..shown], &rest].concat()
            }
            None => {
                if !held.is_empty() {
                    out(Delta::Text { text: held });
                }
                text
            }
        };
        *content = (!kept.is_empty()).then_some(kept);
        outcome
    }
}

/// `model`'s answer to `request`, with the calls it wrote as text read as
/// its calls and held back from the stream (see [`TextCallFilter`]);
/// `on_delta` hears the filtered stream. A request that offers no tools is
/// passed through as it is. What the agent's model calls go through.
pub async fn chat_reading_written_calls(
    model: &dyn ChatModel,
    request: ChatRequest,
    on_delta: &mut dyn FnMut(Delta),
    cancel: &CancelToken,
) -> Result<ChatOutcome> {
    if request.tools.is_empty() {
        return model.chat(request, on_delta, cancel).await;
    }
    let mut filter = TextCallFilter::for_request(&request);
    let outcome = model.chat(request, &mut |d| filter.delta(d, &mut *on_delta), cancel).await?;
    Ok(filter.finish(outcome, on_delta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<String> {
        ["web_search", "open_url", "get_time"].map(String::from).to_vec()
    }

    /// The calls found in `text` as (name, arguments), and the text left.
    fn found(text: &str) -> Option<(String, Vec<(String, Value)>)> {
        let (rest, calls) = split_text_calls(text, &tools())?;
        let calls = calls
            .into_iter()
            .map(|c| (c.function.name, serde_json::from_str(&c.function.arguments).unwrap()))
            .collect();
        Some((rest, calls))
    }

    #[test]
    fn the_written_call_formats_are_recognised() {
        let search = |q: &str| ("web_search".to_owned(), json!({ "query": q }));
        let open = |u: &str| ("open_url".to_owned(), json!({ "url": u }));
        // Formats as the model families document them (Hermes/Qwen2.5 and
        // Qwen3 chat templates' tool_call tags, Mistral's v3 tokenizer call
        // syntax, Llama 3.1's python_tag with JSON calls joined by ';',
        // Llama 3.2's bare JSON with "parameters").
        type Case = (&'static str, &'static str, Vec<(String, Value)>);
        let cases: Vec<Case> = vec![
            ("<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"rust\"}}\n</tool_call>", "", vec![search("rust")]),
            (
                "I'll look both up.\n<tool_call>\n{\"name\": \"open_url\", \"arguments\": {\"url\": \"https://a.example\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"open_url\", \"arguments\": {\"url\": \"https://b.example\"}}\n</tool_call>",
                "I'll look both up.",
                vec![open("https://a.example"), open("https://b.example")],
            ),
            ("<tool_call>{\"name\": \"web_search\", \"arguments\": {\"query\": \"no closing tag\"}}", "", vec![search("no closing tag")]),
            (
                "[TOOL_CALLS] [{\"name\": \"web_search\", \"arguments\": {\"query\": \"a\"}}, {\"name\": \"open_url\", \"arguments\": {\"url\": \"u\"}}]",
                "",
                vec![search("a"), open("u")],
            ),
            (
                "<|python_tag|>{\"name\": \"web_search\", \"parameters\": {\"query\": \"b\"}}; {\"name\": \"open_url\", \"parameters\": {\"url\": \"v\"}}",
                "",
                vec![search("b"), open("v")],
            ),
            ("<|python_tag|>{\"name\": \"web_search\", \"parameters\": {\"query\": \"c\"}}<|eom_id|>", "", vec![search("c")]),
            ("{\"name\": \"web_search\", \"parameters\": {\"query\": \"d\"}}", "", vec![search("d")]),
            (
                "  [{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"arguments\": \"{}\"}}] ",
                "",
                vec![("get_time".to_owned(), json!({}))],
            ),
        ];
        for (text, rest, calls) in cases {
            assert_eq!(found(text), Some((rest.to_owned(), calls)), "{text}");
        }
    }

    #[test]
    fn text_that_only_looks_like_a_call_is_not_one() {
        for text in [
            // A code sample in an answer about JSON.
            "A call looks like this: {\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}} in the API.",
            "```json\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}\n```",
            "Write it so:\n```\n<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>\n```",
            // Unknown tools, no arguments, bad JSON, not an object.
            "{\"name\": \"delete_everything\", \"arguments\": {}}",
            "{\"name\": \"web_search\"}",
            "<tool_call>{\"name\": \"web_search\", \"arguments\": {\"query\": </tool_call>",
            "<tool_call>{\"name\": \"web_search\", \"arguments\": [1, 2]}</tool_call>",
            "{\"name\": \"Alice\", \"age\": 30}",
            "Models emit `<tool_call>` tags and `[TOOL_CALLS]` markers.",
            // Formats whose servers parse them (not read here).
            "[TOOL_CALLS]web_search[ARGS]{\"query\": \"b\"}",
            "<tool_call>\n<function=web_search>\n<parameter=query>\nq\n</parameter>\n</function>\n</tool_call>",
            "",
        ] {
            assert_eq!(found(text), None, "{text}");
        }
    }

    /// Streams `text` through a filter in pieces of `size` chars: what was
    /// shown, then what the end released and the calls.
    fn guarded(text: &str, size: usize) -> (String, String, usize) {
        let mut filter = TextCallFilter::new(tools());
        let chars: Vec<char> = text.chars().collect();
        let mut shown = String::new();
        for piece in chars.chunks(size) {
            filter.delta(Delta::Text { text: piece.iter().collect() }, &mut |d| {
                if let Delta::Text { text } = d {
                    shown.push_str(&text)
                }
            });
        }
        let mut rest = String::new();
        let outcome = filter.finish(ChatOutcome::text(text), &mut |d| {
            if let Delta::Text { text } = d {
                rest.push_str(&text)
            }
        });
        if outcome.message.tool_calls().is_empty() {
            assert_eq!(outcome.message.text(), text, "no call: the answer is the text");
        } else {
            assert_eq!(outcome.message.text(), format!("{shown}{rest}"), "the answer is what showed");
        }
        (shown, rest, outcome.message.tool_calls().len())
    }

    #[test]
    fn a_call_is_never_shown_while_it_streams() {
        let call = "{\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}";
        // (text, what is shown while it streams when it is a call, calls)
        let calls = [
            (format!("Let me check.\n<tool_call>\n{call}\n</tool_call>"), "Let me check.\n", 1),
            (format!("  {call}"), "", 1),
            (format!("[TOOL_CALLS][{call}]"), "", 1),
        ];
        for (text, shown, count) in calls {
            for size in [1, 3, 8, 1000] {
                assert_eq!(
                    guarded(&text, size),
                    (shown.to_owned(), String::new(), count),
                    "{text} in pieces of {size}"
                );
            }
        }
        let not_calls = [
            "Plain prose, no call at all.".to_owned(),
            "{\"answer\": 42}".to_owned(),
            format!("```\n<tool_call>{call}</tool_call>\n```"),
            "{\"name\": \"Alice\"}".to_owned(),
        ];
        for text in not_calls {
            for size in [1, 3, 8, 1000] {
                let (shown, rest, count) = guarded(&text, size);
                assert_eq!((format!("{shown}{rest}"), count), (text.clone(), 0), "{text} in pieces of {size}");
            }
        }
        // An answer that opens like a bare call is held to its end; a list is not.
        assert_eq!(guarded("{\"name\": \"Alice\"}", 2).0, "");
        assert_eq!(guarded("[1] A list and [a link](u).", 2).0, "[1] A list and [a link](u).");
    }
}
