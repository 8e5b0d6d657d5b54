//! The edit type and its structured (JSON) form, with a JSON Schema an LLM's
//! structured-output `response_format` can use.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::{AditError, ParseIssue, Result};

/// One edit: replace the single place where `search` occurs with `replace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// Text to find. Empty means "append `replace` to the document".
    pub search: String,
    /// Text to put in its place. Empty deletes.
    pub replace: String,
}

impl Edit {
    /// An edit from two strings.
    pub fn new(search: impl Into<String>, replace: impl Into<String>) -> Edit {
        Edit { search: search.into(), replace: replace.into() }
    }
}

/// Name of the schema in [`edits_response_format`].
pub const SCHEMA_NAME: &str = "adit_edits";

/// JSON Schema of structured edits: `{"edits": [{"search", "replace"}]}`.
///
/// Written for strict structured output (every property required, no
/// additional properties), which OpenAI-compatible APIs demand.
pub fn edits_json_schema() -> Value {
    crate::tools::schema(
        r#"{
            "type": "object",
            "properties": {
                "edits": {"type": "array", "description": "Edits applied in order, each to the result of the previous one.", "items": {"type": "object", "properties": {"search": {"type": "string", "description": "Exact text to find, copied from the document, with enough surrounding lines to occur exactly once. Empty to append."}, "replace": {"type": "string", "description": "Text that takes its place. Empty to delete."}}, "required": ["search", "replace"], "additionalProperties": false}}
            },
            "required": ["edits"],
            "additionalProperties": false
        }"#,
    )
}

/// The `response_format` value of an OpenAI-compatible Chat Completions
/// request asking for structured edits.
pub fn edits_response_format() -> Value {
    json!({
        "type": "json_schema",
        "json_schema": { "name": SCHEMA_NAME, "strict": true, "schema": edits_json_schema() }
    })
}

const SHAPES: &str = "expected {\"edits\": [...]} or a list of {\"search\", \"replace\"} objects";

/// Parses structured edits: `{"edits": [...]}` (the schema's shape) or a bare
/// list `[{"search", "replace"}, ...]`.
///
/// A malformed item is a `parse` error whose `index` is that item's position.
pub fn parse_edits_json(json: &str) -> Result<Vec<Edit>> {
    let bad =
        |index: usize, line: usize, message: String| AditError::Parse { index, line, issue: ParseIssue::Json(message) };
    // Read as a JSON value and matched by hand: an untagged enum of the two
    // shapes compiled to 9 KB of buffering code.
    let value = serde_json::from_str::<Value>(json).map_err(|e| bad(0, e.line(), e.to_string()))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut fields) => match fields.remove("edits") {
            Some(Value::Array(items)) => items,
            _ => return Err(bad(0, 0, SHAPES.into())),
        },
        _ => return Err(bad(0, 0, SHAPES.into())),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| crate::json::from_value::<Edit>(item).map_err(|e| bad(i, 0, format!("edit {i}: {e}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_parse() {
        let wrapped = parse_edits_json(r#"{"edits":[{"search":"a","replace":"b"}]}"#).unwrap();
        let bare = parse_edits_json(r#"[{"search":"a","replace":"b"}]"#).unwrap();
        assert_eq!(wrapped, bare);
        assert_eq!(wrapped, vec![Edit::new("a", "b")]);
    }

    #[test]
    fn bad_items_name_their_index() {
        let err = parse_edits_json(r#"[{"search":"a","replace":"b"},{"search":"a"}]"#).unwrap_err();
        assert_eq!((err.code().as_str(), err.index()), ("parse", 1));
        let err = parse_edits_json("{\"edits\": [").unwrap_err();
        assert_eq!(err.code(), "parse");
        let err = parse_edits_json(r#"{"changes": []}"#).unwrap_err();
        assert_eq!(err.code(), "parse");
    }

    #[test]
    fn schema_is_strict() {
        let format = edits_response_format();
        assert_eq!(format["json_schema"]["strict"], true);
        assert_eq!(
            format["json_schema"]["schema"]["properties"]["edits"]["items"]["required"],
            json!(["search", "replace"])
        );
    }
}
