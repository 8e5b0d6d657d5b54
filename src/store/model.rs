//! The data model: what the person's projects and the agent's session
//! artifacts look like in storage (camelCase, timestamps in ms since the
//! epoch), and the names of the IndexedDB object stores that hold them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Object store names (the IndexedDB schema in [`super::schema`]).
pub mod stores {
    pub const ARTIFACTS: &str = "sessionArtifacts";
    pub const PROJECTS: &str = "projects";
    pub const SECTIONS: &str = "manuscripts";
    pub const PLOTS: &str = "plots";
    pub const MEMORIES: &str = "memories";
    pub const CHECKPOINTS: &str = "checkpoints";
    pub const REVISIONS: &str = "revisions";
    pub const SETTINGS: &str = "settings";
    /// Chat sessions (title, times), schema v5.
    pub const SESSIONS: &str = "sessions";
    /// What each session's conversation showed, turn by turn, schema v5.
    pub const TRANSCRIPT: &str = "transcript";
    /// What each tool call with effects did, until its step's checkpoint is durable, schema v6.
    pub const RECEIPTS: &str = "toolReceipts";
    /// Large strings of checkpointed state, once per session, schema v7.
    pub const BLOBS: &str = "checkpointBlobs";
    /// Schema v3 only (removed in v4): index entries in a store of their own.
    pub const SNIPPETS: &str = "artifactSnippets";
    /// Sessions whose artifacts were bulk-written without index fields.
    pub const INDEX_STALE: &str = "artifactIndexStale";
    /// Each searched record's word segmentation, checked against its text, schema v9.
    pub const SEGMENTS: &str = "searchSegments";
    /// The tools the person approved for the rest of a session, schema v10.
    pub const GRANTS: &str = "sessionGrants";
}

/// What kind of material an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactType {
    WebSearch,
    ProjectData,
    Text,
}

/// How an artifact may change after it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Edits and replacements are allowed.
    #[default]
    Overwritable,
    /// Only additions at the end (long-term notes, glossaries).
    AppendOnly,
    /// Read-only once created.
    Static,
}

impl Lifecycle {
    /// The stored name ("overwritable", "append_only", "static").
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Overwritable => "overwritable",
            Lifecycle::AppendOnly => "append_only",
            Lifecycle::Static => "static",
        }
    }

    /// From the stored name; anything else is overwritable (the default).
    pub fn from_name(name: &str) -> Lifecycle {
        match name {
            "append_only" => Lifecycle::AppendOnly,
            "static" => Lifecycle::Static,
            _ => Lifecycle::Overwritable,
        }
    }
}

/// A piece of working material of a chat session (the `sessionArtifacts`
/// record; `lifecycle` is ours and defaults to overwritable for records
/// written by other apps).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionArtifact {
    pub id: String,
    pub session_id: String,
    #[serde(rename = "type")]
    pub kind: ArtifactType,
    pub title: String,
    pub content: String,
    pub is_active: bool,
    pub created_at: f64,
    pub updated_at: f64,
    #[serde(default)]
    pub lifecycle: Lifecycle,
}

/// A chat session: its artifacts, checkpoints and transcript share its id.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub title: String,
    pub created_at: f64,
    pub updated_at: f64,
}

/// Who a transcript entry is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    Person,
    Agent,
}

/// One message as the conversation showed it: the person's input, or the
/// agent's Markdown stream for a turn (with how the turn ended).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    pub id: String,
    pub session_id: String,
    pub role: Speaker,
    pub text: String,
    /// For the agent: "completed" or "interrupted" (waiting for a review).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub created_at: f64,
}

/// A writing project.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    pub created_at: f64,
    pub updated_at: f64,
}

/// A chapter (no parent) or a section of one, with its text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManuscriptSection {
    pub id: String,
    pub project_id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    pub title: String,
    /// Position among its siblings (fractional, so inserts need no renumbering).
    pub order: f64,
    #[serde(default)]
    pub content: String,
    pub created_at: f64,
    pub updated_at: f64,
}

/// An item of a project's plot: acts, scenes, beats (hierarchical).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlotItem {
    pub id: String,
    pub project_id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    pub title: String,
    #[serde(default)]
    pub summary: String,
    pub order: f64,
    pub created_at: f64,
    pub updated_at: f64,
}

/// A long-term memory: a dated, tagged summary of a durable fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    pub id: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    pub summary: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub created_at: f64,
}

/// The previous version of a record the agent (or the person) changed, so
/// the change can be undone byte for byte. Read by hand (see `json::Fields`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub id: String,
    /// The object store of the changed record.
    pub store: String,
    pub record_id: String,
    /// The record before the change; `None` when the change created it.
    pub before: Option<Value>,
    /// Who made the change: "agent" or "user".
    pub origin: String,
    /// What the change was (the tool name, for the agent's).
    pub reason: String,
    pub created_at: f64,
    /// Fingerprint of what the change wrote (see `history::fingerprint`):
    /// undo reverts only while the record still is exactly that. Absent in
    /// revisions written before schema v6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Revisions of one batch (a cascaded delete) share a group; undo
    /// restores the group whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

// The records read by hand (see `json::Fields`): a field the record shape
// of DESIGN.md marks optional may be absent; the others are required.
crate::decode_by_hand!(Revision, |f| Ok(Revision {
    id: f.text("id", true)?,
    store: f.text("store", true)?,
    record_id: f.text("recordId", true)?,
    before: f.get("before", false)?.cloned(),
    origin: f.text("origin", true)?,
    reason: f.text("reason", true)?,
    created_at: f.float("createdAt")?,
    after: f.opt_text("after")?,
    group: f.opt_text("group")?,
}));

crate::decode_by_hand!(SessionArtifact, |f| Ok(SessionArtifact {
    id: f.text("id", true)?,
    session_id: f.text("sessionId", true)?,
    kind: match f.text("type", true)?.as_str() {
        "web_search" => ArtifactType::WebSearch,
        "project_data" => ArtifactType::ProjectData,
        "text" => ArtifactType::Text,
        other => return Err(format!("unknown artifact type {other:?} (web_search, project_data or text)")),
    },
    title: f.text("title", true)?,
    content: f.text("content", true)?,
    is_active: match f.need("isActive")? {
        Value::Bool(on) => *on,
        _ => return Err("`isActive` must be a boolean".into()),
    },
    created_at: f.float("createdAt")?,
    updated_at: f.float("updatedAt")?,
    lifecycle: Lifecycle::from_name(&f.text("lifecycle", false)?),
}));

crate::decode_by_hand!(SessionInfo, |f| Ok(SessionInfo {
    id: f.text("id", true)?,
    title: f.text("title", true)?,
    created_at: f.float("createdAt")?,
    updated_at: f.float("updatedAt")?,
}));

crate::decode_by_hand!(TranscriptEntry, |f| Ok(TranscriptEntry {
    id: f.text("id", true)?,
    session_id: f.text("sessionId", true)?,
    role: match f.text("role", true)?.as_str() {
        "person" => Speaker::Person,
        "agent" => Speaker::Agent,
        other => return Err(format!("unknown role {other:?} (person or agent)")),
    },
    text: f.text("text", true)?,
    status: f.opt_text("status")?,
    created_at: f.float("createdAt")?,
}));

crate::decode_by_hand!(Project, |f| Ok(Project {
    id: f.text("id", true)?,
    title: f.text("title", true)?,
    description: f.text("description", false)?,
    created_at: f.float("createdAt")?,
    updated_at: f.float("updatedAt")?,
}));

crate::decode_by_hand!(ManuscriptSection, |f| Ok(ManuscriptSection {
    id: f.text("id", true)?,
    project_id: f.text("projectId", true)?,
    parent_id: f.opt_text("parentId")?,
    title: f.text("title", true)?,
    order: f.float("order")?,
    content: f.text("content", false)?,
    created_at: f.float("createdAt")?,
    updated_at: f.float("updatedAt")?,
}));

crate::decode_by_hand!(PlotItem, |f| Ok(PlotItem {
    id: f.text("id", true)?,
    project_id: f.text("projectId", true)?,
    parent_id: f.opt_text("parentId")?,
    title: f.text("title", true)?,
    summary: f.text("summary", false)?,
    order: f.float("order")?,
    created_at: f.float("createdAt")?,
    updated_at: f.float("updatedAt")?,
}));

crate::decode_by_hand!(Memory, |f| Ok(Memory {
    id: f.text("id", true)?,
    date: f.text("date", true)?,
    summary: f.text("summary", true)?,
    tags: f.strings("tags", false)?,
    created_at: f.float("createdAt")?,
}));

/// What an undo restored, as the person's app is told.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoneChange {
    pub store: String,
    pub record_id: String,
    pub reason: String,
    pub created_at: f64,
}

impl From<Revision> for UndoneChange {
    fn from(r: Revision) -> UndoneChange {
        UndoneChange { store: r.store, record_id: r.record_id, reason: r.reason, created_at: r.created_at }
    }
}

/// A setting (key → JSON value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Setting {
    pub key: String,
    pub value: Value,
}

/// The index entry of an artifact: what the per-call artifact index needs
/// (a few hundred bytes) instead of its full text. In IndexedDB it is the key
/// of the artifact store's `bySessionActive` index, read with a key cursor
/// without loading any record; its derived parts live in the record's
/// [`INDEX_FIELD`] object, written with the record. Only active artifacts
/// have such a key (an inactive one's `_index` has no snippet): the agent
/// injects active ones only, and indexing the rest would cost their writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactSnippet {
    pub id: String,
    pub session_id: String,
    /// 1 when the artifact is active (IndexedDB cannot index booleans).
    pub active: u8,
    pub title: String,
    /// The first [`SNIPPET_CHARS`] characters, cut on a grapheme boundary.
    pub snippet: String,
    /// Length of the full content in UTF-16 code units (JS `String.length`).
    pub length: usize,
    pub created_at: f64,
    /// How the artifact may change (shown in the injected index).
    #[serde(default)]
    pub lifecycle: Lifecycle,
}

/// Characters of content kept in an [`ArtifactSnippet`].
pub const SNIPPET_CHARS: usize = 300;

/// The field of a stored artifact record that holds the derived parts of its
/// index entry: `{active, snippet, length}` (no snippet when inactive). Storage-only: the backends
/// strip it on read, so the record the rest of the code (and a Dexie app)
/// sees keeps the shape of DESIGN.md.
pub const INDEX_FIELD: &str = "_index";

impl ArtifactSnippet {
    /// The index entry of `artifact`.
    pub fn of(artifact: &SessionArtifact) -> ArtifactSnippet {
        ArtifactSnippet {
            id: artifact.id.clone(),
            session_id: artifact.session_id.clone(),
            active: u8::from(artifact.is_active),
            title: artifact.title.clone(),
            snippet: crate::snippet::snippet(&artifact.content, SNIPPET_CHARS).to_owned(),
            length: artifact.content.encode_utf16().count(),
            created_at: artifact.created_at,
            lifecycle: artifact.lifecycle,
        }
    }

    /// The [`INDEX_FIELD`] value of a stored artifact record (any JSON
    /// object: a record a Dexie app wrote may lack fields). An inactive
    /// artifact's carries no snippet, which keeps it out of the index.
    pub fn index_field(record: &Value) -> Value {
        let content = record.get("content").and_then(Value::as_str).unwrap_or("");
        let length = content.encode_utf16().count();
        if record.get("isActive") != Some(&Value::Bool(true)) {
            return serde_json::json!({ "active": 0, "length": length });
        }
        let lifecycle = Lifecycle::from_name(record.get("lifecycle").and_then(Value::as_str).unwrap_or("")).as_str();
        serde_json::json!({ "active": 1, "snippet": crate::snippet::snippet(content, SNIPPET_CHARS), "length": length,
                            "lifecycle": lifecycle })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::{Receipt, ReceiptOutcome};

    fn back<T: Serialize + serde::de::DeserializeOwned>(record: &T) -> T {
        crate::json::from_value(serde_json::to_value(record).unwrap()).unwrap()
    }

    #[test]
    fn every_record_reads_back_as_written_and_a_wrong_field_is_named() {
        let artifact = SessionArtifact {
            id: "a1".into(),
            session_id: "s1".into(),
            kind: ArtifactType::ProjectData,
            title: "t".into(),
            content: "c".into(),
            is_active: true,
            created_at: 1.0,
            updated_at: 2.0,
            lifecycle: Lifecycle::AppendOnly,
        };
        assert_eq!(back(&artifact), artifact);
        let section = ManuscriptSection {
            id: "c1".into(),
            project_id: "p1".into(),
            parent_id: Some("c0".into()),
            title: "第一章".into(),
            order: 1.5,
            content: "本文".into(),
            created_at: 1.0,
            updated_at: 2.0,
        };
        assert_eq!(back(&section), section);
        let plot = PlotItem {
            id: "i1".into(),
            project_id: "p1".into(),
            parent_id: None,
            title: "t".into(),
            summary: "s".into(),
            order: 0.0,
            created_at: 1.0,
            updated_at: 2.0,
        };
        assert_eq!(back(&plot), plot);
        let project =
            Project { id: "p1".into(), title: "t".into(), description: "d".into(), created_at: 1.0, updated_at: 2.0 };
        assert_eq!(back(&project), project);
        let memory = Memory {
            id: "m1".into(),
            date: "2026-12-03".into(),
            summary: "s".into(),
            tags: vec!["x".into()],
            created_at: 1.0,
        };
        assert_eq!(back(&memory), memory);
        let session = SessionInfo { id: "s1".into(), title: "t".into(), created_at: 1.0, updated_at: 2.0 };
        assert_eq!(back(&session), session);
        let entry = TranscriptEntry {
            id: "e1".into(),
            session_id: "s1".into(),
            role: Speaker::Agent,
            text: "x".into(),
            status: Some("completed".into()),
            created_at: 1.0,
        };
        assert_eq!(back(&entry), entry);
        let revision = Revision {
            id: "r1".into(),
            store: "manuscripts".into(),
            record_id: "c1".into(),
            before: Some(json!({"id": "c1"})),
            origin: "agent".into(),
            reason: "edit_manuscript".into(),
            created_at: 1.0,
            after: Some("f".into()),
            group: None,
        };
        assert_eq!(back(&revision), revision);
        let receipt = Receipt::new("s1", "3:c1", ReceiptOutcome::Started, "r");
        assert_eq!(back(&receipt), receipt);
        // Optional fields may be absent; a required one missing or mistyped is named.
        let bare: Project =
            crate::json::from_value(json!({"id": "p", "title": "t", "createdAt": 1, "updatedAt": 1})).unwrap();
        assert_eq!(bare.description, "");
        let mut wrong = serde_json::to_value(&artifact).unwrap();
        wrong["isActive"] = json!("yes");
        let err = crate::json::from_value::<SessionArtifact>(wrong).unwrap_err().to_string();
        assert!(err.contains("isActive"), "{err}");
        let err = crate::json::from_value::<ManuscriptSection>(json!({"id": "c", "projectId": "p", "title": "t"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("order"), "{err}");
        let err = crate::json::from_value::<TranscriptEntry>(
            json!({"id": "e", "sessionId": "s", "role": "wizard", "text": "x", "createdAt": 1}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("wizard"), "{err}");
    }
}
