//! The conversation as the model sees it on a later turn: past turns keep
//! the person's words and the answer, while their tool calls shrink to
//! `[THOUGHT]` / `[ACTION]` lines with heavy arguments replaced by a size
//! summary, and tool results are dropped (they live on as artifacts).

use serde_json::Value;

use crate::llm::Message;

/// Argument fields that carry bulk text.
const HEAVY_FIELDS: &[&str] = &["content", "edits", "search_replace", "text", "markdown", "history", "answer"];
/// Longest argument string kept verbatim in an `[ACTION]` line.
const MAX_ARG_CHARS: usize = 120;

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({} chars)", s.chars().count())
}

/// A tool call's arguments with heavy fields summarised and long strings cut.
pub fn summarize_arguments(arguments: &str) -> String {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return cut(arguments, MAX_ARG_CHARS);
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let shown = if HEAVY_FIELDS.contains(&k.as_str()) {
                let size = match v {
                    Value::String(s) => s.chars().count(),
                    other => other.to_string().chars().count(),
                };
                format!("content summarised: {size} chars")
            } else {
                match v {
                    Value::String(s) => format!("{:?}", cut(s, MAX_ARG_CHARS)),
                    other => cut(&other.to_string(), MAX_ARG_CHARS),
                }
            };
            format!("{k}={shown}")
        })
        .collect();
    parts.join(", ")
}

fn string_arg(arguments: &str, keys: &[&str]) -> Option<String> {
    let v: Value = serde_json::from_str(arguments).ok()?;
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_owned))
}

/// Condenses one past turn (everything after its user message).
fn condense(turn: &[Message]) -> Option<Message> {
    let mut lines = Vec::new();
    let mut answer = String::new();
    for message in turn {
        if let Message::Assistant { content, tool_calls } = message {
            for call in tool_calls {
                let args = &call.function.arguments;
                match call.function.name.as_str() {
                    "record_thought" => lines
                        .push(format!("[THOUGHT] {}", cut(&string_arg(args, &["thought"]).unwrap_or_default(), 400))),
                    "plan_task" => lines.push(format!(
                        "[THOUGHT] plan: {}",
                        cut(&string_arg(args, &["goal"]).unwrap_or_default(), 200)
                    )),
                    "report_progress" => {}
                    "respond" => answer = string_arg(args, &["answer"]).unwrap_or_default(),
                    name => lines.push(format!("[ACTION] {name}({})", summarize_arguments(args))),
                }
            }
            if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                answer = text.to_owned();
            }
        }
    }
    if lines.is_empty() && answer.is_empty() {
        return None;
    }
    if !answer.is_empty() {
        lines.push(answer);
    }
    Some(Message::assistant(lines.join("\n")))
}

/// The messages to send for a turn that starts at `turn_start`: earlier
/// turns condensed, the current one as it is.
pub fn history_for_model(messages: &[Message], turn_start: usize) -> Vec<Message> {
    let turn_start = turn_start.min(messages.len());
    let mut out = Vec::with_capacity(messages.len());
    let past = &messages[..turn_start];
    let mut i = 0;
    while i < past.len() {
        match &past[i] {
            Message::User { .. } | Message::System { .. } => {
                out.push(past[i].clone());
                i += 1;
            }
            _ => {
                let end =
                    past[i..].iter().position(|m| matches!(m, Message::User { .. })).map_or(past.len(), |p| i + p);
                out.extend(condense(&past[i..end]));
                i = end;
            }
        }
    }
    out.extend_from_slice(&messages[turn_start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    #[test]
    fn past_turns_condense_to_thoughts_actions_and_the_answer() {
        let big = "x".repeat(20000);
        let messages = vec![
            Message::user("Edit chapter 1"),
            Message::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall::new("1", "record_thought", &json!({"thought": "I need the text first"})),
                    ToolCall::new("2", "get_manuscript", &json!({"section_id": "abc"})),
                ],
            },
            Message::tool("1", "Noted."),
            Message::tool("2", big.clone()),
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new(
                    "3",
                    "update_manuscript",
                    &json!({"section_id": "abc", "content": big}),
                )],
            },
            Message::tool("3", "Updated."),
            Message::assistant("Done: chapter 1 is tighter now."),
            Message::user("Thanks! And chapter 2?"),
        ];
        let out = history_for_model(&messages, 7);
        assert_eq!(out.len(), 3);
        let condensed = out[1].text();
        assert!(condensed.contains("[THOUGHT] I need the text first"), "{condensed}");
        assert!(condensed.contains("[ACTION] get_manuscript(section_id=\"abc\")"), "{condensed}");
        assert!(condensed.contains("content=content summarised: 20000 chars"), "{condensed}");
        assert!(condensed.ends_with("Done: chapter 1 is tighter now."));
        assert!(condensed.len() < 500, "no heavy field survives");
        assert_eq!(out[2].text(), "Thanks! And chapter 2?");
    }

    #[test]
    fn long_plain_arguments_are_cut() {
        let s = summarize_arguments(&json!({"query": "q".repeat(500)}).to_string());
        assert!(s.contains("(500 chars)") && s.len() < 200, "{s}");
    }
}
