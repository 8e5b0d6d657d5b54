//! Prompt assembly: what the model sees of the session besides the
//! conversation (the artifact index with snippets, system status, answer
//! rules), and how past turns are summarised.

mod history;
mod snippets;

pub use history::{history_for_model, summarize_arguments};
pub use snippets::{
    artifact_index, snippet, snippet_entry, ArtifactIndexOptions, ARTIFACT_INDEX_HEADING,
};
