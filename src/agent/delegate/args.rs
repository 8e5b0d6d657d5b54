//! A `delegate` call's arguments and the tool's spec.

use crate::llm::ToolSpec;
use crate::tools::{Fields, ToolError};

/// The tool's name.
pub const NAME: &str = "delegate";

/// What kind of child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Reads only; reports what it found.
    #[default]
    Explore,
    /// May also write the artifacts of its write set.
    Write,
}

/// What an item of the read set names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Artifact,
    Section,
    /// A project's outline.
    Outline,
    /// A project's continuity notes (summaries, glossary, motifs, cross
    /// references).
    Continuity,
}

/// The item fields that name a source, in the order they are looked for.
const SOURCES: [(&str, Source); 4] = [
    ("artifact", Source::Artifact),
    ("section", Source::Section),
    ("outline", Source::Outline),
    ("continuity", Source::Continuity),
];

/// One item of the read set.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadItem {
    /// What it names, and its id (`None`: the item names nothing).
    pub source: Option<(Source, String)>,
    pub purpose: String,
    /// May be dropped when the budget is short.
    pub optional: bool,
}

impl ReadItem {
    /// The key of the file it names (`artifact:<id>`, `section:<id>`,
    /// `outline:<project>`), if it names one file.
    pub fn key(&self) -> Option<String> {
        let (source, id) = self.source.as_ref()?;
        let (kind, _) = SOURCES.iter().find(|(_, s)| s == source)?;
        (*source != Source::Continuity).then(|| format!("{kind}:{id}"))
    }
}

/// One target of the write set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteItem {
    /// An artifact id (overwrite it) or a title (create an artifact).
    pub target: String,
    pub purpose: String,
}

/// The call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct DelegateArgs {
    pub task: String,
    pub kind: Kind,
    pub reads: Vec<ReadItem>,
    pub writes: Vec<WriteItem>,
    /// The child's token budget (capped by the window less the answer's room).
    pub budget: Option<usize>,
}

impl DelegateArgs {
    /// Reads a call's arguments.
    pub fn parse(f: &Fields<'_>) -> Result<DelegateArgs, ToolError> {
        let kind = match f.opt_text(&["kind"])?.as_deref() {
            None | Some("explore") => Kind::Explore,
            Some("write") => Kind::Write,
            Some(other) => return Err(f.invalid(format!("`kind` is \"explore\" or \"write\", not {other:?}"))),
        };
        let mut reads = Vec::new();
        for r in f.objects("reads")? {
            let mut source = None;
            for (field, kind) in SOURCES {
                if let Some(id) = r.opt_text(&[field])? {
                    source = source.or(Some((kind, id)));
                }
            }
            reads.push(ReadItem {
                source,
                purpose: r.opt_text(&["purpose"])?.unwrap_or_default(),
                optional: r.flag("optional")?,
            });
        }
        let mut writes = Vec::new();
        for w in f.objects("writes")? {
            writes.push(WriteItem {
                target: w.text(&["target"])?,
                purpose: w.opt_text(&["purpose"])?.unwrap_or_default(),
            });
        }
        Ok(DelegateArgs {
            task: f.text(&["task"])?,
            kind,
            reads,
            writes,
            budget: f.number("budget")?.map(|b| b.max(0.0) as usize),
        })
    }

    /// Whether the write set overwrites an artifact (an id target).
    pub fn overwrites(&self) -> bool {
        self.writes.iter().any(|w| is_id(&w.target))
    }
}

/// Whether `target` names an artifact by id (an overwrite) rather than by
/// title (a new artifact).
pub fn is_id(target: &str) -> bool {
    let t = target.trim();
    t.len() == 36
        && t.char_indices().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
}

/// The arguments' schema, as text (see `tools::schema`).
const SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "task": {"type": "string"},
        "kind": {"type": "string", "enum": ["explore", "write"]},
        "reads": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "artifact": {"type": "string", "description": "An artifact id."},
                "section": {"type": "string", "description": "A chapter/section id."},
                "outline": {"type": "string", "description": "A project id: its outline."},
                "continuity": {"type": "string", "description": "A project id: its continuity notes."},
                "purpose": {"type": "string", "description": "Why the child reads it."},
                "optional": {"type": "boolean", "description": "May be left out when the budget is short."}
            }
        }},
        "writes": {"type": "array", "items": {
            "type": "object",
            "properties": {"target": {"type": "string"}, "purpose": {"type": "string"}},
            "required": ["target"]
        }},
        "budget": {"type": "integer", "description": "Token budget of the helper's requests."}
    },
    "required": ["task"]
}"#;

/// The tool's spec.
pub fn spec() -> ToolSpec {
    ToolSpec::function(
        NAME,
        "Hand a self-contained task to a helper that works in its own conversation on exactly the files you list \
         (reads) and may write only the artifacts you list (writes: an artifact id to overwrite, or a title to create). \
         kind \"explore\" only reads and reports; \"write\" also writes its outputs (never the manuscript: propose \
         chapter changes with edit_manuscript yourself). You get the written artifact ids and a short summary.",
        crate::tools::schema(SCHEMA),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_overwrite_and_titles_create() {
        assert!(is_id("0f8fad5b-d9cb-469f-a165-70867728950e"));
        assert!(!is_id("Glossary"));
        assert!(!is_id("0f8fad5b-d9cb-469f-a165-70867728950"));
    }
}
