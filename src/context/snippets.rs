//! The session-artifact index injected before a model call: each active
//! artifact as id, title and a snippet (its whole text when short, or when
//! agent mode is off and the model cannot fetch it).

pub use crate::snippet::snippet;
use crate::store::Lifecycle;

/// Heading that marks the injected index (and lets us find it in history).
pub const ARTIFACT_INDEX_HEADING: &str = "## Session Context (Artifacts)";

/// How the index is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactIndexOptions {
    /// Characters of content shown per artifact.
    pub snippet_chars: usize,
    /// Artifacts shorter than this (in characters) are shown whole.
    pub full_threshold: usize,
    /// With agent mode off the model has no tool to read an artifact, so
    /// every active artifact is shown whole.
    pub agent_mode: bool,
}

impl Default for ArtifactIndexOptions {
    fn default() -> ArtifactIndexOptions {
        ArtifactIndexOptions { snippet_chars: 300, full_threshold: 1000, agent_mode: true }
    }
}

/// One entry of the index in snippet form.
pub fn snippet_entry(out: &mut String, id: &str, title: &str, content: &str, max_chars: usize) {
    out.push_str("### [ID: ");
    out.push_str(id);
    out.push_str("] ");
    out.push_str(title);
    out.push_str("\nSnippet: ");
    out.push_str(snippet(content, max_chars));
    out.push_str("...");
}

/// One artifact in the index: shown whole, or as a snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub body: EntryBody<'a>,
    /// Shown after the title unless overwritable (the default).
    pub lifecycle: Lifecycle,
}

/// What the index shows of an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryBody<'a> {
    Whole(&'a str),
    /// The first characters (already cut on a grapheme boundary).
    Snippet(&'a str),
}

/// Renders the index, or `None` when there is nothing to show.
pub fn render_index(entries: &[IndexEntry<'_>], agent_mode: bool) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let mut out = String::from(ARTIFACT_INDEX_HEADING);
    out.push('\n');
    out.push_str(if agent_mode {
        "The artifacts of this session (your working material). Short ones are shown whole; for the others only a snippet \
         is shown: call get_artifact with the id before relying on, quoting or editing the full text.\n"
    } else {
        "The artifacts of this session (your working material), in full.\n"
    });
    for (i, entry) in entries.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { "\n\n" });
        let title = match entry.lifecycle {
            Lifecycle::Overwritable => entry.title.to_owned(),
            Lifecycle::AppendOnly => format!("{} (append-only: you may only add at the end)", entry.title),
            Lifecycle::Static => format!("{} (static: read-only)", entry.title),
        };
        match entry.body {
            EntryBody::Whole(text) => out.push_str(&format!("### [ID: {}] {title}\nContent:\n{text}", entry.id)),
            EntryBody::Snippet(text) => {
                snippet_entry(&mut out, entry.id, &title, text, usize::MAX);
                // A snippet of web material is cut before its fence closes.
                if let Some(close) = super::untrusted::closing_for(text) {
                    out.push('\n');
                    out.push_str(&close);
                }
            }
        }
    }
    Some(out)
}

/// Whether an artifact of `length` (UTF-16 units, as JS counts) is shown whole.
pub fn shown_whole(length: usize, options: ArtifactIndexOptions) -> bool {
    !options.agent_mode || length < options.full_threshold
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ArtifactType, SessionArtifact};

    /// The index of the active artifacts among `artifacts`, as the agent
    /// builds it from their index entries.
    fn artifact_index(artifacts: &[SessionArtifact], options: ArtifactIndexOptions) -> Option<String> {
        let entries: Vec<IndexEntry<'_>> = artifacts
            .iter()
            .filter(|a| a.is_active)
            .map(|a| IndexEntry {
                id: &a.id,
                title: &a.title,
                body: if shown_whole(a.content.encode_utf16().count(), options) {
                    EntryBody::Whole(&a.content)
                } else {
                    EntryBody::Snippet(snippet(&a.content, options.snippet_chars))
                },
                lifecycle: a.lifecycle,
            })
            .collect();
        render_index(&entries, options.agent_mode)
    }

    fn art(id: &str, content: &str, active: bool) -> SessionArtifact {
        SessionArtifact {
            id: id.into(),
            session_id: "s".into(),
            kind: ArtifactType::Text,
            title: format!("Title {id}"),
            content: content.into(),
            is_active: active,
            created_at: 0.0,
            updated_at: 0.0,
            lifecycle: Lifecycle::Overwritable,
        }
    }

    #[test]
    fn index_shows_snippets_long_texts_and_short_ones_whole() {
        let long = "長".repeat(2000);
        let list = vec![art("a", &long, true), art("b", "brief note", true), art("c", "hidden", false)];
        let index = artifact_index(&list, ArtifactIndexOptions::default()).unwrap();
        assert!(index.starts_with(ARTIFACT_INDEX_HEADING));
        assert!(index.contains(&format!("### [ID: a] Title a\nSnippet: {}...", "長".repeat(300))));
        assert!(index.contains("### [ID: b] Title b\nContent:\nbrief note"));
        assert!(!index.contains("hidden"), "inactive artifacts are left out");
        let off = artifact_index(&list, ArtifactIndexOptions { agent_mode: false, ..Default::default() }).unwrap();
        assert!(off.contains(&long), "agent mode off injects everything whole");
        assert!(artifact_index(&[art("c", "x", false)], ArtifactIndexOptions::default()).is_none());
    }

    #[test]
    fn the_index_says_which_artifacts_are_append_only_or_static() {
        let mut glossary = art("g", "語彙", true);
        glossary.lifecycle = Lifecycle::AppendOnly;
        let mut source = art("q", &"引用".repeat(800), true);
        source.lifecycle = Lifecycle::Static;
        let index =
            artifact_index(&[glossary, source, art("n", "note", true)], ArtifactIndexOptions::default()).unwrap();
        assert!(index.contains("### [ID: g] Title g (append-only: you may only add at the end)\nContent:"), "{index}");
        assert!(index.contains("### [ID: q] Title q (static: read-only)\nSnippet:"), "{index}");
        assert!(index.contains("### [ID: n] Title n\nContent:"), "overwritable is the default, unmarked");
    }
}
