//! The person's projects: manuscripts (chapters and sections), plots, and a
//! project as one JSON document for backup and moving browsers.

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::backend::{key_of, Write};
use super::db::{by_order, from_value, to_value, Db, Origin};
use super::error::{Result, StoreError};
use super::history::{Based, Change};
use super::model::stores::*;
use super::model::*;
use super::tree::{check_forest, check_placement, subtree, TreeRecord};
use crate::platform;

impl Db {
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
        // Its continuity notes go with it.
        for key in self.backend.keys_by_index(ARTIFACTS, "sessionId", &super::continuity_session(id)).await? {
            writes.push(Write::Delete { store: ARTIFACTS, key });
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
        self.save_section_with(section, origin, reason, Vec::new(), None).await
    }

    /// [`Db::save_section`] with more writes in the same atomic batch; with
    /// `based` (the `updatedAt` the new text was made from), written only if
    /// the stored section is still at that version, else `conflict`.
    pub async fn save_section_with(
        &self,
        section: &ManuscriptSection,
        origin: Option<Origin>,
        reason: &str,
        also: Vec<Write>,
        based: Option<f64>,
    ) -> Result<()> {
        self.check_tree_write(SECTIONS, "section", section).await?;
        let change = Change { store: SECTIONS, id: section.id.clone(), new: Some(to_value(SECTIONS, section)?) };
        let based =
            based.map(|version| Based { store: SECTIONS, id: section.id.clone(), version }).into_iter().collect();
        self.change_all_based(vec![change], origin, reason, also, based).await
    }

    /// The person's own save of a section (an editor's title and text):
    /// optimistic and versioned. `section.updatedAt` is the version the
    /// editor loaded; if the stored section changed since (another tab, the
    /// agent), the save fails with `conflict` carrying the current section
    /// and nothing is written. Undoable; returns the saved section (its new
    /// `updatedAt` is the next save's base).
    pub async fn edit_section_as_person(&self, mut section: ManuscriptSection) -> Result<ManuscriptSection> {
        let stored: Option<ManuscriptSection> = self.get(SECTIONS, &section.id).await?;
        section.updated_at = next_version(
            stored.as_ref().map(|s| (s.updated_at, to_value(SECTIONS, s))),
            section.updated_at,
            &section.id,
        )?;
        let based = stored.map(|s| s.updated_at);
        self.save_section_with(&section, Some(Origin::User), "edit", Vec::new(), based).await?;
        Ok(section)
    }

    /// The person's own save of a plot item (a new `id` creates one), versioned
    /// like [`Db::edit_section_as_person`].
    pub async fn edit_plot_item_as_person(&self, mut item: PlotItem) -> Result<PlotItem> {
        let stored: Option<PlotItem> = self.get(PLOTS, &item.id).await?;
        item.updated_at =
            next_version(stored.as_ref().map(|s| (s.updated_at, to_value(PLOTS, s))), item.updated_at, &item.id)?;
        let based = stored.map(|s| Based { store: PLOTS, id: s.id, version: s.updated_at });
        self.save_plot_item_based(&item, Some(Origin::User), "edit", based).await?;
        Ok(item)
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
        // One batch, one revision group: undo brings the whole subtree back.
        let changes =
            subtree(id, &all).iter().map(|child| Change { store: SECTIONS, id: child.clone(), new: None }).collect();
        self.change_all(changes, origin, "delete_section", Vec::new()).await
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
        self.save_plot_item_based(item, origin, reason, None).await
    }

    /// [`Db::save_plot_item`], written only if the stored item is still at
    /// the version `based` names.
    async fn save_plot_item_based(
        &self,
        item: &PlotItem,
        origin: Option<Origin>,
        reason: &str,
        based: Option<Based>,
    ) -> Result<()> {
        self.check_tree_write(PLOTS, "plotItem", item).await?;
        let change = Change { store: PLOTS, id: item.id.clone(), new: Some(to_value(PLOTS, item)?) };
        self.change_all_based(vec![change], origin, reason, Vec::new(), based.into_iter().collect()).await
    }

    /// Deletes a plot item and everything under it.
    pub async fn delete_plot_item(&self, id: &str, origin: Option<Origin>) -> Result<()> {
        let item = self.plot_item(id).await?;
        let all = self.plot(&item.project_id).await?;
        let changes =
            subtree(id, &all).iter().map(|child| Change { store: PLOTS, id: child.clone(), new: None }).collect();
        self.change_all(changes, origin, "delete_plot_item", Vec::new()).await
    }

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
            "continuity": self.backend.by_index(ARTIFACTS, "sessionId", &super::continuity_session(id)).await?,
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
            crate::json::from_value(document["project"].clone()).map_err(|e| invalid("project", e.to_string()))?;
        let sections: Vec<ManuscriptSection> = self.import_records(document, "manuscripts", SECTIONS, &project).await?;
        let plots: Vec<PlotItem> = self.import_records(document, "plots", PLOTS, &project).await?;
        check_forest("manuscripts", &sections)?;
        check_forest("plots", &plots)?;
        let notes = self.import_notes(document, &project).await?;

        let mut writes = Vec::new();
        for store in [SECTIONS, PLOTS] {
            for v in self.backend.by_index(store, "projectId", &project.id).await? {
                writes.push(Write::Delete { store, key: key_of(store, &v)? });
            }
        }
        let notes_session = super::continuity_session(&project.id);
        if document.get("continuity").is_some() {
            for key in self.backend.keys_by_index(ARTIFACTS, "sessionId", &notes_session).await? {
                writes.push(Write::Delete { store: ARTIFACTS, key });
            }
        }
        for note in &notes {
            writes.push(Write::Put { store: ARTIFACTS, value: to_value(ARTIFACTS, note)? });
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

    /// The continuity notes of an export (optional: exports before them
    /// have none), each an artifact of the project's notes pseudo-session
    /// whose id is no other session's artifact.
    async fn import_notes(&self, document: &Value, project: &Project) -> Result<Vec<SessionArtifact>> {
        let list = match document.get("continuity") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(list)) => list,
            Some(_) => {
                return Err(StoreError::Invalid { field: "continuity".into(), message: "must be an array".into() })
            }
        };
        let session = super::continuity_session(&project.id);
        let mut notes = Vec::with_capacity(list.len());
        for (i, value) in list.iter().enumerate() {
            let at = format!("continuity[{i}]");
            let note: SessionArtifact = crate::json::from_value(value.clone())
                .map_err(|e| StoreError::Invalid { field: at.clone(), message: e.to_string() })?;
            if note.session_id != session {
                return Err(StoreError::Invalid {
                    field: format!("{at}.sessionId"),
                    message: "a continuity note of another project".into(),
                });
            }
            if let Some(stored) = self.backend.get(ARTIFACTS, &note.id).await? {
                if stored.get("sessionId").and_then(Value::as_str) != Some(session.as_str()) {
                    return Err(StoreError::Invalid {
                        field: format!("{at}.id"),
                        message: format!("{:?} is an artifact of another session", note.id),
                    });
                }
            }
            notes.push(note);
        }
        Ok(notes)
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
            let record: T = crate::json::from_value(value.clone())
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

/// The `updatedAt` of a versioned save: the record must still be at
/// `based_on` (else `conflict` with the current record); the new version is
/// now, and always later than the stored one.
pub(super) fn next_version(stored: Option<(f64, Result<Value>)>, based_on: f64, id: &str) -> Result<f64> {
    let now = platform::now_ms();
    match stored {
        None => Ok(now),
        Some((version, current)) if version != based_on => Err(StoreError::Conflict {
            id: id.to_owned(),
            detail: "it was saved elsewhere (another tab, or the agent) after this copy was loaded; nothing was \
                     written: keep one text, then save again"
                .into(),
            current: current.ok(),
        }),
        Some((version, _)) => Ok(now.max(version + 1.0)),
    }
}
