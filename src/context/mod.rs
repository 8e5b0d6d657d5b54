//! Prompt assembly: what the model sees of the session besides the
//! conversation (the artifact index with snippets, system status, answer
//! rules), how past turns are summarised, and how a set of files is fitted
//! to a token budget.

mod arguments;
pub mod budget;
mod snippets;
pub mod untrusted;

pub use arguments::summarize_arguments;
pub use snippets::{
    render_index, shown_whole, snippet, snippet_entry, ArtifactIndexOptions, EntryBody, IndexEntry,
    ARTIFACT_INDEX_HEADING,
};
