//! Errors of the Adit engine. Every failure names the edit (or block) it
//! belongs to, so callers can report it and an LLM can retry that one edit.

use std::fmt;

use serde::Serialize;

use super::MatchLevel;

/// `Result` of every Adit operation.
pub type Result<T> = std::result::Result<T, AditError>;

/// Why an Adit call refused. The input text is never partially edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AditError {
    /// No level of the ladder found the search text.
    #[error("edit {index}: search text not found in the document{}", ClosestHint(closest.as_ref()))]
    NoMatch {
        /// Position of the failing edit in the list (0-based).
        index: usize,
        /// The part of the document that looks most like the search text.
        closest: Option<ClosestRegion>,
    },
    /// The search text matches several places at the first level that matched.
    #[error(
        "edit {index}: search text matches {} places ({level} match at lines {}); include more surrounding lines so it matches once",
        lines.len(),
        LineList(lines)
    )]
    Ambiguous {
        /// Position of the failing edit in the list (0-based).
        index: usize,
        /// The ladder level at which the candidates were found.
        level: MatchLevel,
        /// 1-based line numbers where the candidates start.
        lines: Vec<usize>,
    },
    /// The LLM output (SEARCH/REPLACE blocks or JSON) is malformed.
    #[error("block {index}: {issue} (line {line})")]
    Parse {
        /// Position of the block or JSON edit being read (0-based).
        index: usize,
        /// 1-based line of the LLM output where the problem was seen (0 when unknown).
        line: usize,
        /// What is wrong.
        issue: ParseIssue,
    },
}

impl AditError {
    /// Stable machine-readable code: `"no_match"`, `"ambiguous"` or `"parse"`.
    pub fn code(&self) -> crate::error::ErrorCode {
        use crate::error::ErrorCode;
        match self {
            AditError::NoMatch { .. } => ErrorCode::NoMatch,
            AditError::Ambiguous { .. } => ErrorCode::Ambiguous,
            AditError::Parse { .. } => ErrorCode::Parse,
        }
    }

    /// Position of the failing edit (or block) in the input list.
    pub fn index(&self) -> usize {
        match self {
            AditError::NoMatch { index, .. } | AditError::Ambiguous { index, .. } | AditError::Parse { index, .. } => {
                *index
            }
        }
    }
}

/// What is wrong with a piece of LLM output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseIssue {
    /// A SEARCH marker opened a block that never reached its REPLACE marker.
    #[error("block opened at line {opened} has no REPLACE marker")]
    TruncatedBlock {
        /// 1-based line of the SEARCH marker.
        opened: usize,
    },
    /// A `=======` line outside any block.
    #[error("separator outside a SEARCH/REPLACE block")]
    SeparatorOutsideBlock,
    /// A `>>>>>>> REPLACE` line outside any block.
    #[error("REPLACE marker outside a SEARCH/REPLACE block")]
    ReplaceOutsideBlock,
    /// A second `=======` inside one block.
    #[error("second separator inside one block")]
    SecondSeparator,
    /// A REPLACE marker before the block's separator.
    #[error("REPLACE marker before the separator")]
    MissingSeparator,
    /// A SEARCH marker inside a block that is still open.
    #[error("SEARCH marker inside a block opened at line {opened}")]
    NestedSearch {
        /// 1-based line of the SEARCH marker of the open block.
        opened: usize,
    },
    /// The reply holds no SEARCH/REPLACE block at all.
    #[error("no SEARCH/REPLACE block found")]
    NoBlocks,
    /// Structured edits are not valid JSON of the expected shape.
    #[error("invalid structured edits: {0}")]
    Json(String),
}

/// The region of the document most similar to a search text that was not
/// found, quoted so an LLM can copy it exactly on its next try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosestRegion {
    /// 1-based first line of the region.
    pub start_line: usize,
    /// 1-based last line of the region.
    pub end_line: usize,
    /// The region's text, verbatim (cut at [`ClosestRegion::MAX_BYTES`]).
    pub text: String,
}

impl ClosestRegion {
    /// Longest quoted region, in bytes.
    pub const MAX_BYTES: usize = 2000;
}

struct ClosestHint<'a>(Option<&'a ClosestRegion>);

impl fmt::Display for ClosestHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => write!(f, "; no line of it occurs in the document"),
            Some(r) => write!(f, "; closest region (lines {}-{}):\n{}", r.start_line, r.end_line, r.text),
        }
    }
}

struct LineList<'a>(&'a [usize]);

impl fmt::Display for LineList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{line}")?;
        }
        Ok(())
    }
}
