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
//! Markers take 5 to 9 marker characters and may carry trailing whitespace;
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

/// Recognises a marker line (its newline already removed).
fn marker(line: &str) -> Option<Marker> {
    let line = line.trim_end();
    let (ch, word, kind) = match line.as_bytes().first()? {
        b'<' => ('<', "SEARCH", Marker::Search),
        b'=' => ('=', "", Marker::Separator),
        b'>' => ('>', "REPLACE", Marker::Replace),
        _ => return None,
    };
    let run = line.len() - line.trim_start_matches(ch).len();
    if !(5..=9).contains(&run) {
        return None;
    }
    (line[run..].trim_start() == word).then_some(kind)
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
        assert_eq!(marker("<<<< SEARCH"), None);
        assert_eq!(marker("<<<<<<<<<< SEARCH"), None);
        assert_eq!(marker("======="), Some(Marker::Separator));
        assert_eq!(marker("=========="), None);
        assert_eq!(marker("======= x"), None);
        assert_eq!(marker(">>>>>>> REPLACE"), Some(Marker::Replace));
        assert_eq!(marker(">>>>>>> REPLACED"), None);
        assert_eq!(marker(" <<<<<<< SEARCH"), None);
    }
}
