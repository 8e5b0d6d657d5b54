//! Local search over the person's chapters and plot, the sessions'
//! artifacts and transcripts, and long-term memories: pure core (no
//! browser), Japanese and English alike.
//!
//! - [`text`]: folding, words (the segmenter's for Japanese and the other
//!   scripts written without spaces, Unicode's rules for the rest), stems.
//! - [`index`]: the in-memory inverted index, its matching and ranking.
//! - [`Query`], [`Scope`], [`Hit`]: what is asked and what is answered.
//!
//! The store keeps an [`Index`] current on every write and persists each
//! document's segmentation (`store/search.rs`); `Db::search` is the one
//! entry point (the JS `agent.search` and the agent's tools call it).
//!
//! ```
//! use atelier_agent::search::{text, Doc, Index, Kind, Query, Scope};
//! let mut index = Index::new();
//! for (id, body) in [("c1", "東京都に住む祖母"), ("c2", "京都へ行く。")] {
//!     let doc = Doc { key: format!("manuscripts/{id}"), kind: Kind::Manuscript, id: id.into(),
//!                     title: String::new(), body: body.into(), project: None, session: None, hash: 0 };
//!     index.add(doc, &text::segment_now(&["", body]));
//! }
//! let hits = atelier_agent::search::run(&index, &Query::parse("京都").unwrap(), &Scope::all(), 10, None);
//! assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["c2"]);
//! ```

pub mod index;
pub mod meaning;
pub mod stem;
pub mod text;

#[cfg(any(test, target_arch = "wasm32"))]
pub(crate) use index::utf16_len;
pub use index::{text_hash, Doc, Index};

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Manuscript,
    Plot,
    Artifact,
    Memory,
    Transcript,
}

impl Kind {
    const ALL: [Kind; 5] = [Kind::Manuscript, Kind::Plot, Kind::Artifact, Kind::Memory, Kind::Transcript];

    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The name a hit gives its kind (`agent.search`'s `kind`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Manuscript => "manuscript",
            Kind::Plot => "plot",
            Kind::Artifact => "artifact",
            Kind::Memory => "memory",
            Kind::Transcript => "transcript",
        }
    }

    /// The scope name that selects this kind (`agent.search`'s `scope`).
    pub fn scope_name(self) -> &'static str {
        match self {
            Kind::Manuscript => "manuscripts",
            Kind::Plot => "plot",
            Kind::Artifact => "artifacts",
            Kind::Memory => "memories",
            Kind::Transcript => "transcripts",
        }
    }
}

/// Why a search was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("the query is empty: give the words to look for")]
    EmptyQuery,
    #[error("unknown scope {0:?} (manuscripts, plot, artifacts, memories or transcripts)")]
    UnknownScope(String),
    #[error(
        "search options: `{0}` has the wrong type (scope: string[], projectId and sessionId: string, limit: number)"
    )]
    Options(String),
}

/// Which documents a search looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    kinds: u8,
    /// Only the records of this project (manuscripts, plot, the project's continuity notes).
    pub project: Option<String>,
    /// Only the records of this session (its artifacts and transcript).
    pub session: Option<String>,
}

impl Scope {
    /// Every kind, every project and session.
    pub fn all() -> Scope {
        Scope { kinds: u8::MAX, project: None, session: None }
    }

    /// The kinds named (`manuscripts`, `plot`, `artifacts`, `memories`,
    /// `transcripts`; none named: all of them).
    pub fn of(names: &[String], project: Option<String>, session: Option<String>) -> Result<Scope, SearchError> {
        let mut kinds = if names.is_empty() { u8::MAX } else { 0 };
        for name in names {
            let kind = Kind::ALL.into_iter().find(|k| k.scope_name() == name);
            kinds |= kind.ok_or_else(|| SearchError::UnknownScope(name.clone()))?.bit();
        }
        Ok(Scope { kinds, project, session })
    }

    /// Whether `doc` is in the scope.
    pub fn admits(&self, doc: &Doc) -> bool {
        self.kinds & doc.kind.bit() != 0
            && self.project.as_ref().is_none_or(|p| doc.project.as_ref() == Some(p))
            && self.session.as_ref().is_none_or(|s| doc.session.as_ref() == Some(s))
    }
}

/// The options of `agent.search` (`{ scope?, projectId?, sessionId?,
/// limit? }`, null or absent: the defaults; read and checked by
/// `searchOptions` in `src/wasm/js/shape.js`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOptions {
    pub scope: Vec<String>,
    pub project_id: Option<String>,
    pub session_id: Option<String>,
    pub limit: Option<f64>,
    /// The meaning ranking of the query, when there is one (see [`meaning`]).
    pub meaning: Option<meaning::Ranked>,
}

/// Results when no limit is given; the most a search returns.
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 100;

impl SearchOptions {
    pub fn scope(&self) -> Result<Scope, SearchError> {
        Scope::of(&self.scope, self.project_id.clone(), self.session_id.clone())
    }

    /// The limit asked for, within 1..=[`MAX_LIMIT`].
    pub fn limit(&self) -> usize {
        match self.limit {
            Some(n) if n.is_finite() => (n as usize).clamp(1, MAX_LIMIT),
            _ => DEFAULT_LIMIT,
        }
    }
}

/// One part of a query: a word of letters or digits (its stem), or a run of
/// dictionary characters (folded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub text: String,
    pub dictionary: bool,
}

/// A parsed query: the parts a document must all hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub parts: Vec<Part>,
}

/// Characters of a query that are read (the rest of a longer one is ignored),
/// and the most parts kept.
pub const MAX_QUERY_CHARS: usize = 1000;
const MAX_PARTS: usize = 32;

impl Query {
    /// The parts of `text`: each word of letters or digits, each word of a
    /// dictionary run. Punctuation only is a query with
    /// no part (it finds nothing); an empty or blank one is refused.
    pub fn parse(text: &str) -> Result<Query, SearchError> {
        if text.trim().is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        let mut cut = text.char_indices().nth(MAX_QUERY_CHARS).map_or(text.len(), |(i, _)| i);
        // A longer query is cut after its last whole word where it has
        // spaces: half a word would be a part no document holds.
        if cut < text.len() && !text[cut..].starts_with(char::is_whitespace) {
            cut = text[..cut].rfind(char::is_whitespace).filter(|&at| !text[..at].trim().is_empty()).unwrap_or(cut);
        }
        let text = &text[..cut];
        // The query's dictionary runs are cut as the segmenter cuts them (a
        // run's words do not depend on what surrounds it): a half-remembered
        // line is found by its words wherever they stand (side by side ranks
        // first), and each word still matches only on the document's word
        // boundaries (a word the document's context cut finer is matched
        // across its pieces).
        let mut parts = Vec::new();
        text::tokenize(text, &text::segment_now(&[text]), &mut 0, &mut |w| {
            parts.push(Part { text: w.term.to_owned(), dictionary: w.dictionary })
        });
        Ok(Query { parts: distinct(parts) })
    }
}

/// Runs `query` on `index`: best first, at most `limit`.
pub fn run(index: &Index, query: &Query, scope: &Scope, limit: usize, meaning: Option<&meaning::Ranked>) -> Vec<Hit> {
    index.search(query, scope, limit, meaning)
}

/// `parts` without repeats, at most [`MAX_PARTS`]. A lone kana (a
/// particle, okurigana: の, が, っ, た) stands in most documents: it narrows
/// nothing and costs the longest lists, so it is kept only in a query of
/// nothing else.
fn distinct(parts: Vec<Part>) -> Vec<Part> {
    let lone_kana = |p: &Part| {
        let mut chars = p.text.chars();
        p.dictionary && chars.next().is_some_and(|c| matches!(c, '\u{3041}'..='\u{30FF}')) && chars.next().is_none()
    };
    let only_kana = parts.iter().all(lone_kana);
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts {
        if out.len() < MAX_PARTS && !out.contains(&part) && (only_kana || !lone_kana(&part)) {
            out.push(part);
        }
    }
    out
}

/// One search result (`agent.search`'s items, made JS objects by `wasm/search.rs`). `start`/`end`: where the hit
/// stands in the record's text (a chapter's `content`, a plot item's
/// `summary`, an artifact's `content`, a memory's `summary`, a transcript
/// entry's `text`), in UTF-16 code units as JS counts; absent when only the
/// title matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub kind: Kind,
    pub id: String,
    pub title: String,
    pub snippet: String,
    pub score: f64,
    pub project_id: Option<String>,
    pub session_id: Option<String>,
    pub start: Option<u32>,
    pub end: Option<u32>,
    /// Found by meaning only (no word of the query in it; `byMeaning`).
    pub by_meaning: bool,
}

#[cfg(test)]
mod tests;
