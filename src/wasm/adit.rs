//! Adit exports: `applyEdits`, `applySearchReplace`, `parseSearchReplace` and
//! friends. Each failure throws an `Error` with `code` and `index`.

use wasm_bindgen::prelude::*;

use super::convert::{from_js, to_js};
use super::error;
use crate::adit::{self, Edit};

#[wasm_bindgen(typescript_custom_section)]
const TS_ADIT: &'static str = r#"
/** One edit: replace the single place where `search` occurs with `replace`. */
export interface Edit {
  /** Text to find. Empty appends `replace` to the document. */
  search: string;
  /** Text to put in its place. Empty deletes. */
  replace: string;
}
/** The rung of the matching ladder that located an edit. */
export type MatchLevel = "exact" | "line_endings" | "trailing_whitespace" | "trimmed" | "append";
/** How one edit applied. */
export interface EditReport {
  level: MatchLevel;
  /** 1-based line where the edit applied, in the text it was applied to. */
  line: number;
}
/** The result of `applyEditsWithReport`. */
export interface AppliedEdits {
  text: string;
  reports: EditReport[];
}
/** The document region closest to a search text that was not found. */
export interface ClosestRegion {
  startLine: number;
  endLine: number;
  text: string;
}
/** The `Error` thrown by the Adit functions. */
export interface AditError extends Error {
  code: AditErrorCode;
  /** Position of the failing edit (or SEARCH/REPLACE block). */
  index: number;
  /** `parse`: 1-based line of the LLM output. */
  line?: number;
  /** `ambiguous`: 1-based lines where the candidates start. */
  lines?: number[];
  /** `ambiguous`: the level at which the candidates were found. */
  level?: MatchLevel;
  /** `no_match`: the closest region of the document, or null. */
  closest?: ClosestRegion | null;
}
/** An OpenAI-compatible `response_format` asking for `{ edits: Edit[] }`. */
export interface EditsResponseFormat {
  type: "json_schema";
  json_schema: { name: string; strict: true; schema: Record<string, unknown> };
}
"#;

fn edits_from(value: JsValue) -> Result<Vec<Edit>, JsValue> {
    from_js("edits must be an array of { search: string; replace: string }", value)
}

/// Applies `edits` to `text` in order, atomically, and returns the new text.
///
/// ```js
/// applyEdits("Hello world\n", [{ search: "world", replace: "there" }]); // "Hello there\n"
/// ```
#[wasm_bindgen(js_name = applyEdits)]
pub fn apply_edits(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "Edit[]")] edits: JsValue,
) -> Result<String, JsValue> {
    let edits = edits_from(edits)?;
    adit::apply_edits(text, &edits).map(|a| a.text).map_err(error::adit)
}

/// Like `applyEdits`, and reports which ladder level located each edit.
///
/// ```js
/// const { text, reports } = applyEditsWithReport(doc, edits);
/// reports[0].level; // "exact" | "line_endings" | "trailing_whitespace" | "trimmed" | "append"
/// ```
#[wasm_bindgen(js_name = applyEditsWithReport, unchecked_return_type = "AppliedEdits")]
pub fn apply_edits_with_report(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "Edit[]")] edits: JsValue,
) -> Result<JsValue, JsValue> {
    let edits = edits_from(edits)?;
    to_js(&adit::apply_edits(text, &edits).map_err(error::adit)?)
}

/// Parses the SEARCH/REPLACE blocks of an LLM reply and applies them to `text`.
///
/// ```js
/// applySearchReplace("old\n", "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n"); // "new\n"
/// ```
#[wasm_bindgen(js_name = applySearchReplace)]
pub fn apply_search_replace(text: &str, llm_output: &str) -> Result<String, JsValue> {
    adit::apply_search_replace(text, llm_output).map(|a| a.text).map_err(error::adit)
}

/// Parses the SEARCH/REPLACE blocks of an LLM reply into edits.
///
/// ```js
/// parseSearchReplace(reply); // [{ search: "old\n", replace: "new\n" }]
/// ```
#[wasm_bindgen(js_name = parseSearchReplace, unchecked_return_type = "Edit[]")]
pub fn parse_search_replace(llm_output: &str) -> Result<JsValue, JsValue> {
    to_js(&adit::parse_search_replace(llm_output).map_err(error::adit)?)
}

/// Parses structured edits (`{"edits": [...]}` or a bare list) from JSON text.
///
/// ```js
/// parseEditsJson('{"edits":[{"search":"a","replace":"b"}]}'); // [{ search: "a", replace: "b" }]
/// ```
#[wasm_bindgen(js_name = parseEditsJson, unchecked_return_type = "Edit[]")]
pub fn parse_edits_json(json: &str) -> Result<JsValue, JsValue> {
    to_js(&adit::parse_edits_json(json).map_err(error::adit)?)
}

/// The `response_format` to send with a Chat Completions request that asks
/// the model for structured edits.
///
/// ```js
/// body.response_format = editsResponseFormat();
/// ```
#[wasm_bindgen(js_name = editsResponseFormat, unchecked_return_type = "EditsResponseFormat")]
pub fn edits_response_format() -> Result<JsValue, JsValue> {
    to_js(&adit::edits_response_format())
}
