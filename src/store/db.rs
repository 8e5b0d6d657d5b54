//! `Db`: typed access to the person's data and the agent's artifacts over a
//! [`Backend`]. Every change made on the agent's behalf writes the previous
//! version as a [`Revision`] in the same atomic batch, so it can be undone
//! byte for byte.

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::backend::{key_of, Backend, Write};
use super::error::{Result, StoreError};
use super::model::stores::*;
use super::model::*;
use super::tree::{check_forest, check_placement, subtree, TreeRecord};
use crate::platform;

/// Who makes a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Agent,
    User,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Agent => "agent",
            Origin::User => "user",
        }
    }
}

/// Typed access to the database.
#[derive(Clone)]
pub struct Db {
    backend: Rc<dyn Backend>,
}

pub(super) fn to_value<T: Serialize>(store: &str, record: &T) -> Result<Value> {
    serde_json::to_value(record).map_err(|e| StoreError::Codec { store: store.to_owned(), detail: e.to_string() })
}

pub(super) fn from_value<T: DeserializeOwned>(store: &str, value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|e| StoreError::Codec { store: store.to_owned(), detail: e.to_string() })
}

thread_local! {
    static SEQUENCE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Revision (and transcript) ids sort in the order changes were made:
/// milliseconds, then a sequence number for changes within the same millisecond.
pub(super) fn revision_id() -> String {
    let seq = SEQUENCE.with(|s| {
        s.set(s.get() + 1);
        s.get()
    });
    format!("{:015.0}-{seq:09}", platform::now_ms())
}

pub(super) fn by_order<T>(items: &mut Vec<T>, order: impl Fn(&T) -> f64) {
    super::order::sort_by(items, |a, b| order(a).total_cmp(&order(b)));
}

impl Db {
    pub fn new(backend: Rc<dyn Backend>) -> Db {
        Db { backend }
    }

    /// The backend (for checkpoints and other raw access).
    pub fn backend(&self) -> &Rc<dyn Backend> {
        &self.backend
    }

    pub(super) async fn get<T: DeserializeOwned>(&self, store: &str, id: &str) -> Result<Option<T>> {
        self.backend.get(store, id).await?.map(|v| from_value(store, v)).transpose()
    }

    async fn require<T: DeserializeOwned>(&self, store: &str, id: &str) -> Result<T> {
        self.get(store, id).await?.ok_or_else(|| StoreError::NotFound { store: store.to_owned(), id: id.to_owned() })
    }

    pub(super) async fn list<T: DeserializeOwned>(&self, store: &str, index: &str, value: &str) -> Result<Vec<T>> {
        self.backend.by_index(store, index, value).await?.into_iter().map(|v| from_value(store, v)).collect()
    }

    /// Writes `new` (or deletes the record when `None`) with, when the agent
    /// or an undoable user change asks for it, the previous version as a
    /// revision: one atomic batch.
    pub(crate) async fn change(
        &self,
        store: &'static str,
        id: &str,
        new: Option<Value>,
        origin: Option<Origin>,
        reason: &str,
    ) -> Result<()> {
        let mut writes = Vec::with_capacity(2);
        if let Some(origin) = origin {
            let before = self.backend.get(store, id).await?;
            let revision = Revision {
                id: revision_id(),
                store: store.to_owned(),
                record_id: id.to_owned(),
                before,
                origin: origin.as_str().to_owned(),
                reason: reason.to_owned(),
                created_at: platform::now_ms(),
            };
            writes.push(Write::Put { store: REVISIONS, value: to_value(REVISIONS, &revision)? });
        }
        writes.push(match new {
            Some(value) => Write::Put { store, value },
            None => Write::Delete { store, key: id.to_owned() },
        });
        self.backend.write(writes).await
    }

    /// The index entries of the session's artifacts (only the active ones
    /// when `active_only`), newest first: the artifact index reads these
    /// instead of the full contents.
    pub async fn artifact_summaries(&self, session_id: &str, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
        let mut list = self.backend.artifact_index(session_id, active_only).await?;
        super::order::sort_by(&mut list, |a, b| b.created_at.total_cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(list)
    }

    // ---- session artifacts -------------------------------------------------

    /// An artifact by exact id.
    pub async fn artifact(&self, id: &str) -> Result<SessionArtifact> {
        self.require(ARTIFACTS, id).await
    }

    /// The session's artifacts, newest first.
    pub async fn artifacts(&self, session_id: &str) -> Result<Vec<SessionArtifact>> {
        let mut list: Vec<SessionArtifact> = self.list(ARTIFACTS, "sessionId", session_id).await?;
        super::order::sort_by(&mut list, |a, b| b.created_at.total_cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(list)
    }

    /// Stores a new artifact (active).
    pub async fn create_artifact(
        &self,
        session_id: &str,
        kind: ArtifactType,
        title: &str,
        content: &str,
        lifecycle: Lifecycle,
        origin: Origin,
    ) -> Result<SessionArtifact> {
        let now = platform::now_ms();
        let artifact = SessionArtifact {
            id: platform::random_id(),
            session_id: session_id.to_owned(),
            kind,
            title: title.to_owned(),
            content: content.to_owned(),
            is_active: true,
            created_at: now,
            updated_at: now,
            lifecycle,
        };
        self.change(ARTIFACTS, &artifact.id, Some(to_value(ARTIFACTS, &artifact)?), Some(origin), "create_artifact")
            .await?;
        Ok(artifact)
    }

    /// Writes an artifact as given (after the caller checked its lifecycle).
    pub async fn save_artifact(&self, artifact: &SessionArtifact, origin: Option<Origin>, reason: &str) -> Result<()> {
        self.change(ARTIFACTS, &artifact.id, Some(to_value(ARTIFACTS, artifact)?), origin, reason).await
    }

    /// Turns an artifact's context injection on or off.
    pub async fn set_artifact_active(&self, id: &str, active: bool) -> Result<()> {
        let mut artifact = self.artifact(id).await?;
        artifact.is_active = active;
        artifact.updated_at = platform::now_ms();
        self.save_artifact(&artifact, None, "set_active").await
    }

    /// Removes an artifact.
    pub async fn delete_artifact(&self, id: &str, origin: Origin) -> Result<()> {
        self.artifact(id).await?;
        self.change(ARTIFACTS, id, None, Some(origin), "delete_artifact").await
    }

    /// Stores artifacts brought from elsewhere (a backup from `listArtifacts`,
    /// a Dexie app's `sessionArtifacts` rows), replacing any with the same id,
    /// in one batch. Every record is checked first: one that is not an
    /// artifact refuses the whole import and nothing is written. A large
    /// import leaves each session's index to its first read.
    pub async fn import_artifacts(&self, records: &[Value]) -> Result<usize> {
        let mut writes = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            let artifact: SessionArtifact = serde_json::from_value(record.clone()).map_err(|e| {
                let id = record.get("id").and_then(Value::as_str).unwrap_or("?");
                StoreError::Invalid { field: format!("artifacts[{i}]"), message: format!("(id {id}) {e}") }
            })?;
            writes.push(Write::Put { store: ARTIFACTS, value: to_value(ARTIFACTS, &artifact)? });
        }
        let count = writes.len();
        self.backend.write(writes).await?;
        Ok(count)
    }

    // ---- projects, manuscripts, plots ---------------------------------------

    pub async fn projects(&self) -> Result<Vec<Project>> {
        let mut list: Vec<Project> =
            self.backend.all(PROJECTS).await?.into_iter().map(|v| from_value(PROJECTS, v)).collect::<Result<_>>()?;
        super::order::sort_by(&mut list, |a, b| b.updated_at.total_cmp(&a.updated_at));
        Ok(list)
    }

    pub async fn project(&self, id: &str) -> Result<Project> {
        self.require(PROJECTS, id).await
    }

    /// Creates a project.
    pub async fn create_project(&self, title: &str, description: &str) -> Result<Project> {
        let now = platform::now_ms();
        let project = Project {
            id: platform::random_id(),
            title: title.to_owned(),
            description: description.to_owned(),
            created_at: now,
            updated_at: now,
        };
        self.backend.write(vec![Write::Put { store: PROJECTS, value: to_value(PROJECTS, &project)? }]).await?;
        Ok(project)
    }

    /// Writes a project (title, description).
    pub async fn save_project(&self, project: &Project) -> Result<()> {
        self.backend.write(vec![Write::Put { store: PROJECTS, value: to_value(PROJECTS, project)? }]).await
    }

    /// Deletes a project with its manuscript and plot, in one batch.
    pub async fn delete_project(&self, id: &str) -> Result<()> {
        let mut writes = vec![Write::Delete { store: PROJECTS, key: id.to_owned() }];
        for store in [SECTIONS, PLOTS] {
            for v in self.backend.by_index(store, "projectId", id).await? {
                writes.push(Write::Delete { store, key: key_of(store, &v)? });
            }
        }
        self.backend.write(writes).await
    }

    /// The project's chapters and sections, in order.
    pub async fn sections(&self, project_id: &str) -> Result<Vec<ManuscriptSection>> {
        let mut list: Vec<ManuscriptSection> = self.list(SECTIONS, "projectId", project_id).await?;
        by_order(&mut list, |s| s.order);
        Ok(list)
    }

    pub async fn section(&self, id: &str) -> Result<ManuscriptSection> {
        self.require(SECTIONS, id).await
    }

    /// Adds a chapter (or a section under `parent_id`) at the end.
    pub async fn add_section(
        &self,
        project_id: &str,
        parent_id: Option<&str>,
        title: &str,
        content: &str,
    ) -> Result<ManuscriptSection> {
        self.project(project_id).await?;
        let siblings = self.sections(project_id).await?;
        let order =
            siblings.iter().filter(|s| s.parent_id.as_deref() == parent_id).map(|s| s.order).fold(0.0, f64::max) + 1.0;
        let now = platform::now_ms();
        let section = ManuscriptSection {
            id: platform::random_id(),
            project_id: project_id.to_owned(),
            parent_id: parent_id.map(str::to_owned),
            title: title.to_owned(),
            order,
            content: content.to_owned(),
            created_at: now,
            updated_at: now,
        };
        self.check_tree_write(SECTIONS, "section", &section).await?;
        self.backend.write(vec![Write::Put { store: SECTIONS, value: to_value(SECTIONS, &section)? }]).await?;
        Ok(section)
    }

    /// Replaces a section's text (and title), keeping a revision when `origin` is given.
    pub async fn save_section(&self, section: &ManuscriptSection, origin: Option<Origin>, reason: &str) -> Result<()> {
        self.check_tree_write(SECTIONS, "section", section).await?;
        self.change(SECTIONS, &section.id, Some(to_value(SECTIONS, section)?), origin, reason).await
    }

    /// Checks a section or plot item can be written: its project exists, it
    /// stays in its project, and its parent is in the same project without a loop.
    async fn check_tree_write<T>(&self, store: &'static str, field: &str, record: &T) -> Result<()>
    where
        T: TreeRecord + DeserializeOwned,
    {
        self.project(record.project_id()).await.map_err(|_| StoreError::Invalid {
            field: format!("{field}.projectId"),
            message: format!("there is no project {:?}", record.project_id()),
        })?;
        if let Some(stored) = self.get::<T>(store, record.id()).await? {
            if stored.project_id() != record.project_id() {
                return Err(StoreError::Invalid {
                    field: format!("{field}.projectId"),
                    message: "a record cannot move to another project".into(),
                });
            }
        }
        let siblings: Vec<T> = self.list(store, "projectId", record.project_id()).await?;
        check_placement(field, record, &siblings)
    }

    /// Deletes a section and the sections under it.
    pub async fn delete_section(&self, id: &str, origin: Option<Origin>) -> Result<()> {
        let section = self.section(id).await?;
        let all = self.sections(&section.project_id).await?;
        // Children first, so a crash between two deletes leaves no orphan.
        for child in subtree(id, &all).iter().rev() {
            self.change(SECTIONS, child, None, origin, "delete_section").await?;
        }
        Ok(())
    }

    /// The project's plot items, in order (parents before their children's order is up to the caller).
    pub async fn plot(&self, project_id: &str) -> Result<Vec<PlotItem>> {
        let mut list: Vec<PlotItem> = self.list(PLOTS, "projectId", project_id).await?;
        by_order(&mut list, |p| p.order);
        Ok(list)
    }

    pub async fn plot_item(&self, id: &str) -> Result<PlotItem> {
        self.require(PLOTS, id).await
    }

    /// Writes a plot item, keeping a revision when `origin` is given. A
    /// parent outside the project, or one that would loop, is refused.
    pub async fn save_plot_item(&self, item: &PlotItem, origin: Option<Origin>, reason: &str) -> Result<()> {
        self.check_tree_write(PLOTS, "plotItem", item).await?;
        self.change(PLOTS, &item.id, Some(to_value(PLOTS, item)?), origin, reason).await
    }

    /// Deletes a plot item and everything under it.
    pub async fn delete_plot_item(&self, id: &str, origin: Option<Origin>) -> Result<()> {
        let item = self.plot_item(id).await?;
        let all = self.plot(&item.project_id).await?;
        for child in subtree(id, &all).iter().rev() {
            self.change(PLOTS, child, None, origin, "delete_plot_item").await?;
        }
        Ok(())
    }

    // ---- memories -------------------------------------------------------------

    /// Dates that have memories, ascending.
    pub async fn memory_dates(&self) -> Result<Vec<String>> {
        let mut dates: Vec<String> = self
            .backend
            .all(MEMORIES)
            .await?
            .iter()
            .filter_map(|v| v.get("date")?.as_str().map(str::to_owned))
            .collect();
        super::order::sort_by(&mut dates, |a, b| a.cmp(b));
        dates.dedup();
        Ok(dates)
    }

    /// Memories from `start` to `end` (inclusive, `YYYY-MM-DD`).
    pub async fn memories_between(&self, start: &str, end: &str) -> Result<Vec<Memory>> {
        let mut list: Vec<Memory> = self
            .backend
            .all(MEMORIES)
            .await?
            .into_iter()
            .map(|v| from_value::<Memory>(MEMORIES, v))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|m| m.date.as_str() >= start && m.date.as_str() <= end)
            .collect();
        super::order::sort_by(&mut list, |a, b| a.date.cmp(&b.date).then(a.created_at.total_cmp(&b.created_at)));
        Ok(list)
    }

    /// Stores a memory.
    pub async fn add_memory(&self, date: &str, summary: &str, tags: Vec<String>) -> Result<Memory> {
        let memory = Memory {
            id: platform::random_id(),
            date: date.to_owned(),
            summary: summary.to_owned(),
            tags,
            created_at: platform::now_ms(),
        };
        self.backend.write(vec![Write::Put { store: MEMORIES, value: to_value(MEMORIES, &memory)? }]).await?;
        Ok(memory)
    }

    // ---- revisions and undo -----------------------------------------------

    /// Revisions made by `origin`, newest first.
    pub async fn revisions(&self, origin: Origin) -> Result<Vec<Revision>> {
        let mut list: Vec<Revision> = self.list(REVISIONS, "origin", origin.as_str()).await?;
        super::order::sort_by(&mut list, |a, b| b.id.cmp(&a.id));
        Ok(list)
    }

    /// Undoes the newest change made by `origin`: the record returns to its
    /// previous version exactly (or disappears if the change created it), in
    /// one batch with the revision's removal. `None` when there is nothing to undo.
    pub async fn undo_last(&self, origin: Origin) -> Result<Option<Revision>> {
        let Some(revision) = self.revisions(origin).await?.into_iter().next() else {
            return Ok(None);
        };
        let store =
            [ARTIFACTS, SECTIONS, PLOTS, PROJECTS].into_iter().find(|s| *s == revision.store).ok_or_else(|| {
                StoreError::Codec { store: revision.store.clone(), detail: "unknown store in a revision".into() }
            })?;
        let writes = vec![
            match &revision.before {
                Some(before) => Write::Put { store, value: before.clone() },
                None => Write::Delete { store, key: revision.record_id.clone() },
            },
            Write::Delete { store: REVISIONS, key: revision.id.clone() },
        ];
        self.backend.write(writes).await?;
        Ok(Some(revision))
    }

    // ---- settings ---------------------------------------------------------------

    pub async fn setting(&self, key: &str) -> Result<Option<Value>> {
        Ok(self.get::<Setting>(SETTINGS, key).await?.map(|s| s.value))
    }

    pub async fn set_setting(&self, key: &str, value: Value) -> Result<()> {
        let setting = Setting { key: key.to_owned(), value };
        self.backend.write(vec![Write::Put { store: SETTINGS, value: to_value(SETTINGS, &setting)? }]).await
    }

    // ---- import / export ------------------------------------------------------

    /// A whole project as one JSON document (backup, moving browsers).
    pub async fn export_project(&self, id: &str) -> Result<Value> {
        let project = self
            .backend
            .get(PROJECTS, id)
            .await?
            .ok_or_else(|| StoreError::NotFound { store: PROJECTS.into(), id: id.into() })?;
        Ok(json!({
            "format": "atelier-agent/project",
            "version": 1,
            "project": project,
            "manuscripts": self.backend.by_index(SECTIONS, "projectId", id).await?,
            "plots": self.backend.by_index(PLOTS, "projectId", id).await?,
        }))
    }

    /// Restores an exported project (replacing one with the same id), in one
    /// batch. The document is checked first, and nothing is written when any
    /// part is refused: every record must be well-typed and belong to the
    /// project, no id may belong to another project's record, and the parents
    /// of sections and plot items must be in the document without loops.
    pub async fn import_project(&self, document: &Value) -> Result<Project> {
        let invalid = |field: &str, message: String| StoreError::Invalid { field: field.to_owned(), message };
        if document.get("format").and_then(Value::as_str) != Some("atelier-agent/project") {
            return Err(invalid("format", "not an atelier-agent project export".into()));
        }
        if document.get("version").and_then(Value::as_u64) != Some(1) {
            return Err(invalid("version", "unsupported export version (expected 1)".into()));
        }
        let project: Project =
            serde_json::from_value(document["project"].clone()).map_err(|e| invalid("project", e.to_string()))?;
        let sections: Vec<ManuscriptSection> = self.import_records(document, "manuscripts", SECTIONS, &project).await?;
        let plots: Vec<PlotItem> = self.import_records(document, "plots", PLOTS, &project).await?;
        check_forest("manuscripts", &sections)?;
        check_forest("plots", &plots)?;

        let mut writes = Vec::new();
        for store in [SECTIONS, PLOTS] {
            for v in self.backend.by_index(store, "projectId", &project.id).await? {
                writes.push(Write::Delete { store, key: key_of(store, &v)? });
            }
        }
        writes.push(Write::Put { store: PROJECTS, value: to_value(PROJECTS, &project)? });
        for section in &sections {
            writes.push(Write::Put { store: SECTIONS, value: to_value(SECTIONS, section)? });
        }
        for item in &plots {
            writes.push(Write::Put { store: PLOTS, value: to_value(PLOTS, item)? });
        }
        self.backend.write(writes).await?;
        Ok(project)
    }

    /// The records of `field` (a list in `document`), typed and checked to
    /// belong to `project` and to no other project.
    async fn import_records<T>(
        &self,
        document: &Value,
        field: &str,
        store: &'static str,
        project: &Project,
    ) -> Result<Vec<T>>
    where
        T: TreeRecord + DeserializeOwned,
    {
        let list = match document.get(field) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(StoreError::Invalid { field: field.to_owned(), message: "must be an array".into() }),
        };
        let mut records = Vec::with_capacity(list.len());
        for (i, value) in list.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let record: T = serde_json::from_value(value.clone())
                .map_err(|e| StoreError::Invalid { field: at.clone(), message: e.to_string() })?;
            if record.project_id() != project.id {
                return Err(StoreError::Invalid {
                    field: format!("{at}.projectId"),
                    message: "the record belongs to another project".into(),
                });
            }
            if let Some(stored) = self.backend.get(store, record.id()).await? {
                if stored.get("projectId").and_then(Value::as_str) != Some(project.id.as_str()) {
                    return Err(StoreError::Invalid {
                        field: format!("{at}.id"),
                        message: format!("{:?} is a record of another project", record.id()),
                    });
                }
            }
            records.push(record);
        }
        Ok(records)
    }
}
