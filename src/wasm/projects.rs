//! The person's projects: manuscripts, plots, export/import, undo of the
//! agent's changes and each record's history.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::agent::{future_to_promise, JsAgent};
use super::convert::{from_js, to_js};
use super::error;
use crate::store::{ManuscriptSection, Origin, PlotItem, UndoneChange};

#[wasm_bindgen(typescript_custom_section)]
const TS_PROJECTS: &'static str = r#"
export interface Project { id: string; title: string; description: string; createdAt: number; updatedAt: number }
export interface ManuscriptSection {
  id: string; projectId: string; parentId: string | null; title: string; order: number; content: string;
  createdAt: number; updatedAt: number;
}
/** What `undo` restored. */
export interface UndoneChange { store: string; recordId: string; reason: string; createdAt: number }
/** One change in a record's history (`revisions`): who made it, when, and why. */
export interface Revision {
  id: string;
  /** "manuscripts" | "plots" | "sessionArtifacts" | "projects". */
  store: string;
  recordId: string;
  origin: "agent" | "user";
  /** The tool for the agent's changes; "edit", "restore", ... for the person's. */
  reason: string;
  createdAt: number;
  /** The change created the record (restoring it deletes the record). */
  created: boolean;
  /** Characters of the version before the change (what `restoreRevision` puts back). */
  beforeChars: number;
}
export interface PlotItem {
  id: string; projectId: string; parentId: string | null; title: string; summary: string; order: number;
  createdAt: number; updatedAt: number;
}
/** A whole project as one JSON document (`exportProject` / `importProject`). */
export interface ProjectExport {
  format: "atelier-agent/project"; version: 1; project: Project; manuscripts: ManuscriptSection[]; plots: PlotItem[];
  /** The project's continuity notes (append-only artifacts). An import without them keeps the notes there. */
  continuity: Artifact[];
}
"#;

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// The person's projects, most recently changed first.
    #[wasm_bindgen(unchecked_return_type = "Promise<Project[]>")]
    pub fn projects(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.projects().await.map_err(error::store)?) })
    }

    /// Creates a project.
    #[wasm_bindgen(js_name = createProject, unchecked_return_type = "Promise<Project>")]
    pub fn create_project(&self, title: String, description: Option<String>) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            to_js(&db.create_project(&title, description.as_deref().unwrap_or("")).await.map_err(error::store)?)
        })
    }

    /// A project's chapters and sections, in order.
    #[wasm_bindgen(unchecked_return_type = "Promise<ManuscriptSection[]>")]
    pub fn sections(&self, #[wasm_bindgen(js_name = projectId)] project_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.sections(&project_id).await.map_err(error::store)?) })
    }

    /// Adds a chapter (or a section under `parentId`) at the end.
    #[wasm_bindgen(js_name = addSection, unchecked_return_type = "Promise<ManuscriptSection>")]
    pub fn add_section(
        &self,
        #[wasm_bindgen(js_name = projectId)] project_id: String,
        title: String,
        content: Option<String>,
        #[wasm_bindgen(js_name = parentId)] parent_id: Option<String>,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let section = db
                .add_section(&project_id, parent_id.as_deref(), &title, content.as_deref().unwrap_or(""))
                .await
                .map_err(error::store)?;
            to_js(&section)
        })
    }

    /// Saves a section the person edited (title and text); undoable and
    /// versioned: `section.updatedAt` must be the stored one (the version the
    /// editor loaded), else it rejects with `conflict` and the error's
    /// `current` is the section as it is now; nothing is written. Resolves to
    /// the saved section (its `updatedAt` is the next save's base).
    #[wasm_bindgen(js_name = saveSection, unchecked_return_type = "Promise<ManuscriptSection>")]
    pub fn save_section(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ManuscriptSection")] section: JsValue,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let section: ManuscriptSection = from_js("a ManuscriptSection", section)?;
            to_js(&db.edit_section_as_person(section).await.map_err(error::store)?)
        })
    }

    /// Deletes a section and the sections under it.
    #[wasm_bindgen(js_name = deleteSection, unchecked_return_type = "Promise<void>")]
    pub fn delete_section(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_section(&id, Some(Origin::User)).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// A project's plot items, in order.
    #[wasm_bindgen(unchecked_return_type = "Promise<PlotItem[]>")]
    pub fn plot(&self, #[wasm_bindgen(js_name = projectId)] project_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.plot(&project_id).await.map_err(error::store)?) })
    }

    /// Creates or updates a plot item (give a new `id` to create one);
    /// versioned like `saveSection`. Resolves to the saved item.
    #[wasm_bindgen(js_name = savePlotItem, unchecked_return_type = "Promise<PlotItem>")]
    pub fn save_plot_item(&self, #[wasm_bindgen(unchecked_param_type = "PlotItem")] item: JsValue) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let item: PlotItem = from_js("a PlotItem", item)?;
            to_js(&db.edit_plot_item_as_person(item).await.map_err(error::store)?)
        })
    }

    /// Deletes a plot item and everything under it.
    #[wasm_bindgen(js_name = deletePlotItem, unchecked_return_type = "Promise<void>")]
    pub fn delete_plot_item(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_plot_item(&id, Some(Origin::User)).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a project with its manuscript and plot.
    #[wasm_bindgen(js_name = deleteProject, unchecked_return_type = "Promise<void>")]
    pub fn delete_project(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_project(&id).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// A whole project as one JSON document (backup, moving browsers).
    #[wasm_bindgen(js_name = exportProject, unchecked_return_type = "Promise<ProjectExport>")]
    pub fn export_project(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.export_project(&id).await.map_err(error::store)?) })
    }

    /// Restores an exported project (replacing one with the same id).
    #[wasm_bindgen(js_name = importProject, unchecked_return_type = "Promise<Project>")]
    pub fn import_project(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ProjectExport | Omit<ProjectExport, \"continuity\">")] document: JsValue,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let document = super::convert::value_from_js("a ProjectExport", document)?;
            to_js(&db.import_project(&document).await.map_err(error::store)?)
        })
    }

    /// A record's history (a section, plot item or artifact), newest first:
    /// the newest 50 changes are kept per record.
    #[wasm_bindgen(unchecked_return_type = "Promise<Revision[]>")]
    pub fn revisions(&self, #[wasm_bindgen(js_name = targetId)] target_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.revisions_of(&target_id).await.map_err(error::store)?) })
    }

    /// Puts back the version from before a revision's change, as a new
    /// change of the person's (in the history too, so it can be reverted).
    #[wasm_bindgen(js_name = restoreRevision, unchecked_return_type = "Promise<void>")]
    pub fn restore_revision(&self, #[wasm_bindgen(js_name = revisionId)] revision_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.restore_revision(&revision_id).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Undoes the agent's last change (manuscript, plot or artifact; a
    /// cascaded delete whole), byte for byte; resolves to what was undone, or
    /// null when there is nothing. Rejects with `conflict`, changing nothing,
    /// when the record was written since (the person's later edit is never
    /// thrown away; `revisions` and `restoreRevision` can still go back).
    #[wasm_bindgen(unchecked_return_type = "Promise<UndoneChange | null>")]
    pub fn undo(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let undone = db.undo_last(Origin::Agent).await.map_err(error::store)?;
            to_js(&undone.map(UndoneChange::from))
        })
    }
}
