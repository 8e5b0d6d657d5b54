//! Reads SEARCH/REPLACE blocks out of raw LLM output.
//!
//! ```text
//! <<<<<<< SEARCH
//! text to find
//! =======
//! text to put there
//! >>>>>>> REPLACE
//! ```
//!
//! The marker lines accepted are the union of what the established parsers
//! accept (see the case table's marker rows):
//! - aider: 5 to 9 `<` / `=` / `>`, trailing whitespace;
//! - Cline: 3 or more characters, `------- SEARCH` / `+++++++ REPLACE` as well
//!   as `<` / `>`, an optional `>` after the word (`SEARCH>`);
//! - Roo-Code: `:start_line: N` and `:end_line: N` lines and a `-------` line
//!   right after the SEARCH marker, which are not part of the search text.
//!
//! CRLF replies are accepted. Anything outside blocks (prose, code fences,
//! file names) is ignored. Section lines are kept verbatim with their newline.

use super::error::{AditError, ParseIssue, Result};
use super::schema::Edit;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Search,
    Separator,
    Replace,
}

/// Recognises a marker line (its newline already removed): a run of at
/// least 3 marker characters, then the word (none for the separator), an
/// optional `>`, trailing whitespace.
fn marker(line: &str) -> Option<Marker> {
    let line = line.trim_end();
    let first = *line.as_bytes().first()?;
    let (word, kind) = match first {
        b'<' | b'-' => ("SEARCH", Marker::Search),
        b'=' => ("", Marker::Separator),
        b'>' | b'+' => ("REPLACE", Marker::Replace),
        _ => return None,
    };
    let run = line.len() - line.trim_start_matches(first as char).len();
    if run < 3 {
        return None;
    }
    let rest = line[run..].trim_start();
    let rest = match kind {
        Marker::Separator => rest,
        _ => rest.strip_suffix('>').unwrap_or(rest),
    };
    (rest == word).then_some(kind)
}

/// A line Roo-Code puts between the SEARCH marker and the search text
/// (`:start_line: 12`, `:end_line: 20`, `-------`): not part of the text.
fn search_preamble(line: &str) -> bool {
    let line = line.trim_end();
    let numbered = |key: &str| {
        line.strip_prefix(key).is_some_and(|n| !n.trim().is_empty() && n.trim().bytes().all(|b| b.is_ascii_digit()))
    };
    line == "-------" || numbered(":start_line:") || numbered(":end_line:")
}

enum State {
    Outside,
    Search { opened: usize, search: String },
    Replace { opened: usize, search: String, replace: String },
}

/// Parses every SEARCH/REPLACE block of `llm_output`, in order.
///
/// Returns an empty list when the output holds no block. A malformed block is
/// an [`AditError::Parse`] naming the block (`index`) and the 1-based line.
///
/// ```
/// use atelier_agent::adit::parse_search_replace;
/// let edits = parse_search_replace("Here:\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n").unwrap();
/// assert_eq!((edits[0].search.as_str(), edits[0].replace.as_str()), ("old\n", "new\n"));
/// ```
pub fn parse_search_replace(llm_output: &str) -> Result<Vec<Edit>> {
    let mut edits = Vec::new();
    let mut state = State::Outside;
    let fail = |index: usize, line: usize, issue: ParseIssue| AditError::Parse { index, line, issue };

    for (n, raw) in llm_output.split_inclusive('\n').enumerate() {
        let line_no = n + 1;
        let bare = raw.strip_suffix('\n').unwrap_or(raw);
        let bare = bare.strip_suffix('\r').unwrap_or(bare);
        let index = edits.len();
        state = match (state, marker(bare)) {
            (State::Outside, Some(Marker::Search)) => State::Search { opened: line_no, search: String::new() },
            (State::Outside, Some(Marker::Separator)) => {
                return Err(fail(index, line_no, ParseIssue::SeparatorOutsideBlock))
            }
            (State::Outside, Some(Marker::Replace)) => {
                return Err(fail(index, line_no, ParseIssue::ReplaceOutsideBlock))
            }
            (State::Outside, None) => State::Outside,

            (State::Search { opened, search }, Some(Marker::Separator)) => {
                State::Replace { opened, search, replace: String::new() }
            }
            (State::Search { .. }, Some(Marker::Replace)) => {
                return Err(fail(index, line_no, ParseIssue::MissingSeparator))
            }
            (State::Search { opened, .. } | State::Replace { opened, .. }, Some(Marker::Search)) => {
                return Err(fail(index, line_no, ParseIssue::NestedSearch { opened }))
            }
            (State::Search { opened, search }, None) if search.is_empty() && search_preamble(bare) => {
                State::Search { opened, search }
            }
            (State::Search { opened, mut search }, None) => {
                search.push_str(raw);
                State::Search { opened, search }
            }

            (State::Replace { search, replace, .. }, Some(Marker::Replace)) => {
                edits.push(Edit { search, replace });
                State::Outside
            }
            (State::Replace { .. }, Some(Marker::Separator)) => {
                return Err(fail(index, line_no, ParseIssue::SecondSeparator))
            }
            (State::Replace { opened, search, mut replace }, None) => {
                replace.push_str(raw);
                State::Replace { opened, search, replace }
            }
        };
    }
    match state {
        State::Outside => Ok(edits),
        State::Search { opened, .. } | State::Replace { opened, .. } => {
            Err(fail(edits.len(), opened, ParseIssue::TruncatedBlock { opened }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_lengths_and_words() {
        assert_eq!(marker("<<<<< SEARCH"), Some(Marker::Search));
        assert_eq!(marker("<<<<<<<<< SEARCH  \t"), Some(Marker::Search));
        assert_eq!(marker("<<<<<<<SEARCH"), Some(Marker::Search));
        assert_eq!(marker("<<< SEARCH"), Some(Marker::Search), "Cline: 3 or more");
        assert_eq!(marker("<<<<<<<<<<<< SEARCH"), Some(Marker::Search));
        assert_eq!(marker("<< SEARCH"), None);
        assert_eq!(marker("------- SEARCH"), Some(Marker::Search), "Cline's current marker");
        assert_eq!(marker("<<<<<<< SEARCH>"), Some(Marker::Search), "Cline and Roo-Code: a trailing >");
        assert_eq!(marker("-------"), None, "Roo-Code's separator line is no marker");
        assert_eq!(marker("======="), Some(Marker::Separator));
        assert_eq!(marker("==="), Some(Marker::Separator));
        assert_eq!(marker("=="), None);
        assert_eq!(marker("======= x"), None);
        assert_eq!(marker(">>>>>>> REPLACE"), Some(Marker::Replace));
        assert_eq!(marker("+++++++ REPLACE"), Some(Marker::Replace));
        assert_eq!(marker(">>>>>>> REPLACE>"), Some(Marker::Replace));
        assert_eq!(marker(">>>>>>> REPLACED"), None);
        assert_eq!(marker(" <<<<<<< SEARCH"), None);
        assert_eq!(marker("--- a/file.md"), None, "a diff header is no marker");
    }

    #[test]
    fn roo_preamble_lines() {
        assert!(search_preamble(":start_line: 12"));
        assert!(search_preamble(":end_line:20  "));
        assert!(search_preamble("-------"));
        assert!(!search_preamble(":start_line: twelve"));
        assert!(!search_preamble("---"), "a Markdown rule is text");
    }
}
