//! A tool call's arguments in one short line (tool chips, the compression
//! sub-agent's transcript): the fields the tool declares bulk replaced by
//! their size, long strings cut.

use serde_json::Value;

/// Longest argument string kept verbatim.
const MAX_ARG_CHARS: usize = 120;

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({} chars)", s.chars().count())
}

/// A tool call's arguments with the fields `bulk` names summarised and long
/// strings cut.
pub fn summarize_arguments(arguments: &str, bulk: &dyn Fn(&str) -> bool) -> String {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return cut(arguments, MAX_ARG_CHARS);
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let shown = if bulk(k) {
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
        let s = summarize_arguments(&json!({"query": "q".repeat(500)}).to_string(), &|_| false);
        assert!(s.contains("(500 chars)") && s.len() < 200, "{s}");
        let s = summarize_arguments(&json!({"content": "c".repeat(500), "id": "a1"}).to_string(), &|f| f == "content");
        assert_eq!(s, "content=content summarised: 500 chars, id=\"a1\"");
    }
}
