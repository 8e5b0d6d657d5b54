//! Tool calls a model writes as text, when its server has no tool parser
//! for it: Hermes/Qwen `<tool_call>{"name": …, "arguments": …}</tool_call>`
//! (and Qwen3-Coder's `<function=…><parameter=…>` form inside the tags),
//! Mistral `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]name[ARGS]{…}`, Llama 3.1
//! `<|python_tag|>{"name": …, "parameters": …}`, and a bare
//! `{"name": …, "parameters": …}` (or an array of them) that is the whole
//! answer.
//!
//! Only a call of an offered tool with object arguments counts. A marker
//! inside a fenced code block, an unknown tool name, JSON that does not
//! parse, or a call-shaped object inside prose (a code sample in an answer
//! about JSON) leaves the text as it is. [`TextCallGuard`] holds back the
//! streamed text that may become a call, so a call is never shown as the
//! answer: from a marker on, or an answer that opens like a bare call.

use serde_json::{Map, Value};

use super::structured::balanced_end;
use super::types::ToolCall;

const HERMES: &str = "<tool_call>";
const HERMES_END: &str = "</tool_call>";
const MISTRAL: &str = "[TOOL_CALLS]";
const LLAMA: &str = "<|python_tag|>";
const MARKERS: [&str; 3] = [HERMES, MISTRAL, LLAMA];
const FENCE: &str = "```";

/// The tool calls written in `text` and the answer text without them, or
/// `None` when `text` holds no call of the `tools` offered.
pub fn split_text_calls(text: &str, tools: &[String]) -> Option<(String, Vec<ToolCall>)> {
    let whole = text.trim();
    if let Some(calls) = serde_json::from_str(whole).ok().and_then(|v| bare_calls(&v, tools)) {
        return Some((String::new(), calls));
    }
    let (mut rest, mut calls, mut pos) = (String::new(), Vec::new(), 0);
    while let Some((at, marker)) = next_marker(text, pos) {
        rest.push_str(&text[pos..at]);
        let body = at + marker.len();
        let (end, found) = match marker {
            HERMES => {
                let close = text[body..].find(HERMES_END).map(|e| body + e);
                let call = hermes(&text[body..close.unwrap_or(text.len())], tools);
                (close.map_or(text.len(), |c| c + HERMES_END.len()), call.map(|c| vec![c]))
            }
            MISTRAL => mistral(text, body, tools),
            _ => {
                let stop =
                    ["<|eom_id|>", "<|eot_id|>"].iter().filter_map(|t| Some((text[body..].find(t)?, t.len()))).min();
                let (inner, end) = stop.map_or((text.len(), text.len()), |(at, len)| (body + at, body + at + len));
                let parts = text[body..inner].split(';').map(|p| json_call(p.trim(), tools, false));
                (end, parts.collect())
            }
        };
        match found {
            Some(found) if !found.is_empty() => calls.extend(found),
            _ => rest.push_str(&text[at..end]),
        }
        pos = end;
    }
    if calls.is_empty() {
        return None;
    }
    rest.push_str(&text[pos..]);
    Some((rest.trim().to_owned(), calls))
}

/// The first marker at or after `from` that is not inside a fenced code block.
fn next_marker(text: &str, from: usize) -> Option<(usize, &'static str)> {
    let mut from = from;
    loop {
        let (at, marker) = MARKERS.iter().filter_map(|m| Some((from + text[from..].find(m)?, *m))).min()?;
        if text[..at].matches(FENCE).count() % 2 == 0 {
            return Some((at, marker));
        }
        from = at + marker.len();
    }
}

/// A bare call, or an array of them, that is the whole answer (each with
/// its arguments key, so a JSON answer that merely names a tool is not one).
fn bare_calls(value: &Value, tools: &[String]) -> Option<Vec<ToolCall>> {
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(|v| call_of(v, tools, true)).collect(),
        Value::Object(_) => call_of(value, tools, true).map(|c| vec![c]),
        _ => None,
    }
}

/// `{"name", "arguments" | "parameters"}`, also wrapped as `{"type":
/// "function", "function": {…}}`; arguments as an object or as JSON text of one.
fn call_of(value: &Value, tools: &[String], needs_arguments: bool) -> Option<ToolCall> {
    let call = value.get("function").filter(|f| f.is_object()).unwrap_or(value);
    let name = call.get("name")?.as_str()?;
    if !tools.iter().any(|t| t == name) {
        return None;
    }
    let arguments = match call.get("arguments").or_else(|| call.get("parameters")) {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::String(text)) => match serde_json::from_str(text).ok()? {
            Value::Object(map) => map,
            _ => return None,
        },
        None if !needs_arguments => Map::new(),
        _ => return None,
    };
    let id = value.get("id").and_then(Value::as_str).map_or_else(ToolCall::fresh_id, str::to_owned);
    Some(ToolCall::new(id, name, &Value::Object(arguments)))
}

/// A call written as one JSON object in `text`.
fn json_call(text: &str, tools: &[String], needs_arguments: bool) -> Option<ToolCall> {
    call_of(&serde_json::from_str(text).ok()?, tools, needs_arguments)
}

/// The inside of `<tool_call>…</tool_call>`: JSON, or Qwen3-Coder's
/// `<function=name><parameter=key>value</parameter>…</function>`.
fn hermes(inner: &str, tools: &[String]) -> Option<ToolCall> {
    let inner = inner.trim();
    let Some(function) = inner.strip_prefix("<function=") else {
        return json_call(inner, tools, false);
    };
    let (name, mut rest) = function.split_once('>')?;
    let mut arguments = Map::new();
    while let Some(start) = rest.find("<parameter=") {
        let (key, after) = rest[start + "<parameter=".len()..].split_once('>')?;
        let (value, after) = after.split_once("</parameter>")?;
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let parsed =
            Some(value.trim_start()).filter(|v| v.starts_with(['{', '['])).and_then(|v| serde_json::from_str(v).ok());
        arguments.insert(key.to_owned(), parsed.unwrap_or_else(|| Value::String(value.to_owned())));
        rest = after;
    }
    call_of(&serde_json::json!({ "name": name.trim(), "arguments": arguments }), tools, true)
}

/// What follows `[TOOL_CALLS]` at `body`: a JSON array of calls, or
/// `name[ARGS]{…}` (`[CALL_ID]id` may come before `[ARGS]`). The end of
/// what was read, and the calls (`None` when it is not one).
fn mistral(text: &str, body: usize, tools: &[String]) -> (usize, Option<Vec<ToolCall>>) {
    let start = body + (text[body..].len() - text[body..].trim_start().len());
    let after = &text[start..];
    if after.starts_with('[') {
        return match balanced_end(after.as_bytes()) {
            Some(len) => {
                let calls = serde_json::from_str::<Value>(&after[..len]).ok().and_then(|v| match v {
                    Value::Array(items) => items.iter().map(|c| call_of(c, tools, false)).collect(),
                    _ => None,
                });
                (start + len, calls)
            }
            None => (text.len(), None),
        };
    }
    let Some((head, args)) = after.split_once("[ARGS]") else {
        return (text.len(), None);
    };
    let (name, id) = head.split_once("[CALL_ID]").map_or((head, None), |(n, id)| (n, Some(id.trim())));
    let args_start = args.len() - args.trim_start().len();
    let Some(len) = balanced_end(&args.as_bytes()[args_start..]) else {
        return (text.len(), None);
    };
    let end = start + head.len() + "[ARGS]".len() + args_start + len;
    let mut call = serde_json::json!({ "name": name.trim(), "arguments": &args[args_start..args_start + len] });
    if let Some(id) = id {
        call["id"] = Value::String(id.to_owned());
    }
    (end, call_of(&call, tools, true).map(|c| vec![c]))
}

/// Whether an answer that opens with `start` (trimmed, `{` or `[` first)
/// may be a bare call: `Some(true)` yes, `Some(false)` no, `None` too soon to tell.
fn opens_like_a_call(start: &str) -> Option<bool> {
    let object = start.strip_prefix('[').map_or(start, str::trim_start);
    let Some(inner) = object.strip_prefix('{') else {
        return if object.is_empty() { None } else { Some(false) };
    };
    let inner = inner.trim_start();
    let Some(key) = inner.strip_prefix('"') else {
        return if inner.is_empty() { None } else { Some(false) };
    };
    match key.find('"') {
        Some(end) => Some(matches!(&key[..end], "name" | "type" | "function")),
        None if key.len() < 9 => None,
        None => Some(false),
    }
}

/// Holds back streamed answer text that may become a tool call.
#[derive(Debug, Clone)]
pub(crate) struct TextCallGuard {
    tools: Vec<String>,
    held: String,
    /// Everything from here on is held until the answer ends.
    holding: bool,
    /// Nothing shown yet: a bare call must be the whole answer.
    at_start: bool,
    /// Fences in the text shown so far (an odd count: inside a code block).
    fences: usize,
    /// The last two bytes shown (a fence may straddle two pieces).
    tail: String,
}

impl TextCallGuard {
    pub(crate) fn new(tools: Vec<String>) -> TextCallGuard {
        TextCallGuard { tools, held: String::new(), holding: false, at_start: true, fences: 0, tail: String::new() }
    }

    /// The next piece of answer text; returns what may be shown now.
    pub(crate) fn push(&mut self, text: &str) -> String {
        self.held.push_str(text);
        if self.holding {
            return String::new();
        }
        if self.at_start {
            let start = self.held.trim_start();
            if start.is_empty() {
                return String::new();
            }
            if start.starts_with(['{', '[']) {
                match opens_like_a_call(start) {
                    None => return String::new(),
                    Some(true) => {
                        self.holding = true;
                        return String::new();
                    }
                    Some(false) => {}
                }
            }
            self.at_start = false;
        }
        let mut from = 0;
        let marker = loop {
            let Some((at, marker)) = MARKERS.iter().filter_map(|m| Some((from + self.held[from..].find(m)?, *m))).min()
            else {
                break None;
            };
            let fences = format!("{}{}", self.tail, &self.held[..at]).matches(FENCE).count();
            if (self.fences + fences) % 2 == 0 {
                break Some(at);
            }
            from = at + marker.len();
        };
        let ready = match marker {
            Some(at) => {
                self.holding = true;
                at
            }
            None => {
                let partial = MARKERS.iter().map(|m| super::think::partial_tag(&self.held, m)).max();
                self.held.len() - partial.unwrap_or(0)
            }
        };
        let rest = self.held.split_off(ready);
        let shown = std::mem::replace(&mut self.held, rest);
        let seen = format!("{}{shown}", self.tail);
        self.fences += seen.matches(FENCE).count();
        // The tail never holds the end of a fence already counted.
        let after_fence = seen.rfind(FENCE).map_or(0, |at| at + FENCE.len());
        let cut = (seen.len().saturating_sub(2).max(after_fence)..seen.len())
            .find(|&i| seen.is_char_boundary(i))
            .unwrap_or(seen.len());
        self.tail = seen[cut..].to_owned();
        shown
    }

    /// Ends the answer: the text still held and, when `recognise`, the calls in it.
    pub(crate) fn finish(&mut self, recognise: bool) -> (String, Vec<ToolCall>) {
        let held = std::mem::take(&mut self.held);
        match split_text_calls(&held, &self.tools).filter(|_| recognise) {
            Some(found) => found,
            None => (held, Vec::new()),
        }
    }

    /// Forgets what is held (the text streamed so far turned out to be reasoning).
    pub(crate) fn reset(&mut self) {
        *self = TextCallGuard::new(std::mem::take(&mut self.tools));
    }
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
        // Qwen3 chat templates' tool_call tags, Qwen3-Coder's XML call,
        // Mistral's v3 and v11 tokenizer call syntax, Llama 3.1's
        // python_tag with JSON, Llama 3.2's bare JSON with "parameters").
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
                "<tool_call>\n<function=web_search>\n<parameter=query>\n京都 紅葉\n</parameter>\n</function>\n</tool_call>",
                "",
                vec![search("京都 紅葉")],
            ),
            (
                "[TOOL_CALLS] [{\"name\": \"web_search\", \"arguments\": {\"query\": \"a\"}}, {\"name\": \"open_url\", \"arguments\": {\"url\": \"u\"}}]",
                "",
                vec![search("a"), open("u")],
            ),
            (
                "[TOOL_CALLS]web_search[ARGS]{\"query\": \"b\"}[TOOL_CALLS]open_url[CALL_ID]a1B2c3D4e[ARGS]{\"url\": \"v\"}",
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
            "",
        ] {
            assert_eq!(found(text), None, "{text}");
        }
    }

    /// Streams `text` through a guard in pieces of `size` chars: what was
    /// shown, then what the end released and the calls.
    fn guarded(text: &str, size: usize) -> (String, String, usize) {
        let mut guard = TextCallGuard::new(tools());
        let chars: Vec<char> = text.chars().collect();
        let mut shown = String::new();
        for piece in chars.chunks(size) {
            shown.push_str(&guard.push(&piece.iter().collect::<String>()));
        }
        let (rest, calls) = guard.finish(true);
        (shown, rest, calls.len())
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
        // Held to the end only while it opens like a call.
        assert_eq!(guarded("{\"name\": \"Alice\"}", 2).0, "");
        assert_eq!(guarded("{\"answer\": 42}", 2).0, "{\"answer\": 42}");
    }
}
