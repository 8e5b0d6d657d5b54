//! Adit: deterministic, atomic text edits for LLM output.
//!
//! An LLM describes a change as `{search, replace}` pairs, either as
//! SEARCH/REPLACE blocks in free text ([`parse_search_replace`]) or as
//! structured JSON ([`parse_edits_json`], schema in [`edits_response_format`]).
//! [`apply_edits`] applies them in order, each on the previous result, and
//! either all of them apply or none does.
//!
//! Each edit is located by a ladder of [`MatchLevel`]s, each tried only when the
//! previous one found nothing: exact text, then line endings normalised, then
//! whole lines without trailing whitespace, then whole lines trimmed on both
//! sides (Unicode-aware, so the ideographic space U+3000 that indents Japanese
//! paragraphs counts as indentation). One match applies; two or more refuse
//! with [`AditError::Ambiguous`]; none refuses with [`AditError::NoMatch`],
//! carrying the closest region of the document so the model can retry.
//!
//! ```
//! use atelier_agent::adit::{apply_search_replace, MatchLevel};
//! let doc = "fn main() {\n    println!(\"hi\");\n}\n";
//! let reply = "<<<<<<< SEARCH\nprintln!(\"hi\");\n=======\nprintln!(\"hello\");\n>>>>>>> REPLACE\n";
//! let applied = apply_search_replace(doc, reply).unwrap();
//! assert_eq!(applied.text, "fn main() {\n    println!(\"hello\");\n}\n");
//! // A block holds whole lines; this one is found with its indentation trimmed.
//! assert_eq!(applied.reports[0].level, MatchLevel::Trimmed);
//! ```

mod diff;
mod engine;
mod error;
mod parser;
mod schema;
mod text;

pub use diff::unified_diff;
pub use engine::{apply_edits, Applied, EditReport, MatchLevel};
pub use error::{AditError, ClosestRegion, ParseIssue, Result};
pub use parser::parse_search_replace;
pub use schema::{edits_json_schema, edits_response_format, parse_edits_json, Edit};

/// Parses SEARCH/REPLACE blocks out of `llm_output` and applies them to `text`.
///
/// A reply with no block at all is a [`AditError::Parse`] error
/// ([`ParseIssue::NoBlocks`]): an answer that edits nothing is not a success.
pub fn apply_search_replace(text: &str, llm_output: &str) -> Result<Applied> {
    let edits = parse_search_replace(llm_output)?;
    if edits.is_empty() {
        return Err(AditError::Parse { index: 0, line: 0, issue: ParseIssue::NoBlocks });
    }
    apply_edits(text, &edits)
}
