//! Tools for a model that has none: when the server says a model cannot
//! take `tools` (Ollama's `/api/show` capabilities, a listing's), a chat
//! request that offers them is rewritten so the model is told of the tools
//! in its system message and writes each call as
//! `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, the format the
//! package reads as calls (its `TextCallFilter`). Instead of the server's
//! `400 … does not support tools` in the middle of a run, the run works.
//!
//! The request loses `tools`, `tool_choice` and `parallel_tool_calls`; the
//! history is written in the same terms: an assistant message's calls as
//! the same blocks, a tool result as a user message
//! `<tool_response name="…">…</tool_response>`, and messages of one role in
//! a row joined (a template without tool support alternates strictly).

use serde_json::{json, Map, Value};

/// How the model is told to call a tool (then the tools, one per line).
const HOW: &str = "You can call tools. To call one, write only a block of this form (several blocks for several \
calls), and nothing else in that message:\n<tool_call>{\"name\": \"<tool name>\", \"arguments\": {<its arguments>}}</tool_call>\n\
Each result comes back in a <tool_response> block. The tools, with their arguments as JSON Schema:";

/// Rewrites `request` (a Chat Completions body) as described above, if it
/// offers tools; returns whether it did.
pub fn inline_tools(request: &mut Value) -> bool {
    let Some(fields) = request.as_object_mut() else { return false };
    let tools = match fields.remove("tools") {
        Some(Value::Array(tools)) if !tools.is_empty() => tools,
        _ => return false,
    };
    fields.remove("tool_choice");
    fields.remove("parallel_tool_calls");
    let mut listing = String::from(HOW);
    for tool in &tools {
        let function = &tool["function"];
        let name = function["name"].as_str().unwrap_or_default();
        let about = function["description"].as_str().unwrap_or_default();
        let schema = function.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}));
        listing.push_str(&format!("\n- {name}: {about} Arguments: {schema}"));
    }
    let messages = fields.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out: Vec<Value> = Vec::with_capacity(messages.len() + 1);
    let mut names: Map<String, Value> = Map::new();
    for message in messages {
        let role = message["role"].as_str().unwrap_or_default().to_owned();
        let text = content_text(&message["content"]);
        let (role, text) = match role.as_str() {
            "assistant" => {
                let mut text = text;
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let function = &call["function"];
                    let name = function["name"].as_str().unwrap_or_default();
                    if let Some(id) = call["id"].as_str() {
                        names.insert(id.to_owned(), name.into());
                    }
                    let arguments = match &function["arguments"] {
                        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| json!({})),
                        other => other.clone(),
                    };
                    let block = json!({"name": name, "arguments": arguments});
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!("<tool_call>{block}</tool_call>"));
                }
                ("assistant".to_owned(), text)
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let name = names.get(id).and_then(Value::as_str).unwrap_or("tool");
                ("user".to_owned(), format!("<tool_response name=\"{name}\">\n{text}\n</tool_response>"))
            }
            _ => (role, text),
        };
        match out.last_mut() {
            Some(last) if last["role"] == role.as_str() => {
                let joined = format!("{}\n\n{text}", last["content"].as_str().unwrap_or_default());
                last["content"] = joined.into();
            }
            _ => out.push(json!({"role": role, "content": text})),
        }
    }
    match out.first_mut() {
        Some(first) if first["role"] == "system" => {
            let joined = format!("{}\n\n{listing}", first["content"].as_str().unwrap_or_default());
            first["content"] = joined.into();
        }
        _ => out.insert(0, json!({"role": "system", "content": listing})),
    }
    fields.insert("messages".into(), Value::Array(out));
    true
}

/// A message's content as text (a string, or the text of its parts).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_become_instructions_and_the_history_plain_messages() {
        let mut request = json!({
            "model": "m", "tool_choice": "auto", "parallel_tool_calls": true,
            "tools": [{"type": "function", "function": {"name": "open_url", "description": "Opens a page.",
                        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}}}],
            "messages": [
                {"role": "system", "content": "You help."},
                {"role": "user", "content": "Compare a and b"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"a\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "open_url", "arguments": {"url": "b"}}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Page A"},
                {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "Page B"}]},
                {"role": "user", "content": "Which is longer?"}
            ]
        });
        assert!(inline_tools(&mut request));
        assert!(request.get("tools").is_none() && request.get("tool_choice").is_none());
        assert!(request.get("parallel_tool_calls").is_none());
        let messages = request["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"], "strict alternation");
        let system = messages[0]["content"].as_str().unwrap();
        assert!(system.starts_with("You help.\n\n") && system.contains("- open_url: Opens a page. Arguments: {"));
        assert_eq!(
            messages[2]["content"],
            "<tool_call>{\"arguments\":{\"url\":\"a\"},\"name\":\"open_url\"}</tool_call>\n\
             <tool_call>{\"arguments\":{\"url\":\"b\"},\"name\":\"open_url\"}</tool_call>"
        );
        let results = messages[3]["content"].as_str().unwrap();
        assert!(results.starts_with("<tool_response name=\"open_url\">\nPage A\n</tool_response>\n\n"), "{results}");
        assert!(results.contains("Page B") && results.ends_with("Which is longer?"), "{results}");
    }

    #[test]
    fn a_request_without_tools_is_left_alone() {
        let mut request = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": []});
        let before = request.clone();
        assert!(!inline_tools(&mut request));
        assert_eq!(request["messages"], before["messages"]);
        let mut no_system =
            json!({"tools": [{"function": {"name": "t"}}], "messages": [{"role": "user", "content": "x"}]});
        assert!(inline_tools(&mut no_system));
        assert_eq!(no_system["messages"][0]["role"], "system");
    }
}
