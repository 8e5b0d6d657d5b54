//! A tool call's arguments in one short line (tool chips, the compression
//! sub-agent's transcript): bulk fields replaced by their size, long
//! strings cut.

use serde_json::Value;

/// Argument fields that carry bulk text.
const HEAVY_FIELDS: &[&str] = &["content", "edits", "search_replace", "text", "markdown", "history", "answer"];
/// Longest argument string kept verbatim.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_plain_arguments_are_cut() {
        let s = summarize_arguments(&json!({"query": "q".repeat(500)}).to_string());
        assert!(s.contains("(500 chars)") && s.len() < 200, "{s}");
    }
}
