//! Session artifacts as the person manages them: list, import, activate,
//! edit (lifecycles enforced by the store), change a lifecycle, delete.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::agent::{future_to_promise, JsAgent};
use super::convert::{from_js, to_js};
use super::error;
use crate::store::Origin;

#[wasm_bindgen(typescript_custom_section)]
const TS_ARTIFACTS: &'static str = r#"
export type ArtifactType = "web_search" | "project_data" | "text";
export type Lifecycle = "overwritable" | "append_only" | "static";
export interface Artifact {
  id: string;
  sessionId: string;
  type: ArtifactType;
  title: string;
  content: string;
  isActive: boolean;
  createdAt: number;
  updatedAt: number;
  lifecycle: Lifecycle;
}
/** An artifact to import: a row from `listArtifacts` or from a Dexie app's `sessionArtifacts` table. */
export type ArtifactInput = Omit<Artifact, "lifecycle"> & { lifecycle?: Lifecycle };
"#;

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// The session's artifacts, newest first.
    #[wasm_bindgen(js_name = listArtifacts, unchecked_return_type = "Promise<Artifact[]>")]
    pub fn list_artifacts(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.artifacts(&session_id).await.map_err(error::store)?) })
    }

    /// Stores artifacts (a backup from `listArtifacts`, a Dexie app's rows),
    /// replacing any with the same id, in one transaction; a record that is
    /// not an artifact, or that names an artifact of another session, refuses
    /// the whole import (code `invalid_argument`, naming it), and so does one
    /// that would change a stored artifact against its lifecycle (`lifecycle`).
    /// Resolves to the number stored.
    #[wasm_bindgen(js_name = importArtifacts, unchecked_return_type = "Promise<number>")]
    pub fn import_artifacts(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ArtifactInput[]")] artifacts: JsValue,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let records = super::convert::items_from_js("an array of artifacts", artifacts)?;
            Ok(JsValue::from(db.import_artifacts(records).await.map_err(error::store)? as u32))
        })
    }

    /// Changes an artifact's lifecycle: the person's deliberate act (the
    /// agent cannot); making a static artifact overwritable is how to edit it.
    #[wasm_bindgen(js_name = setArtifactLifecycle, unchecked_return_type = "Promise<Artifact>")]
    pub fn set_artifact_lifecycle(
        &self,
        id: String,
        #[wasm_bindgen(unchecked_param_type = "Lifecycle")] lifecycle: JsValue,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let lifecycle: crate::store::Lifecycle =
                from_js("lifecycle must be \"overwritable\", \"append_only\" or \"static\"", lifecycle)?;
            to_js(&db.set_artifact_lifecycle(&id, lifecycle).await.map_err(error::store)?)
        })
    }

    /// Turns an artifact's context injection on or off.
    #[wasm_bindgen(js_name = setArtifactActive, unchecked_return_type = "Promise<void>")]
    pub fn set_artifact_active(&self, id: String, active: bool) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.set_artifact_active(&id, active).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Replaces an artifact's content as the person edited it (refused for
    /// static artifacts; append-only ones may only grow at the end). With
    /// `basedOn` (the `updatedAt` the edit started from), a stale edit
    /// rejects with `conflict` carrying the current artifact.
    #[wasm_bindgen(js_name = editArtifact, unchecked_return_type = "Promise<Artifact>")]
    pub fn edit_artifact(
        &self,
        id: String,
        content: String,
        #[wasm_bindgen(js_name = basedOn)] based_on: Option<f64>,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            to_js(&db.edit_artifact_as_person(&id, content, based_on).await.map_err(error::store)?)
        })
    }

    /// Deletes an artifact (the person may delete static ones too).
    #[wasm_bindgen(js_name = deleteArtifact, unchecked_return_type = "Promise<void>")]
    pub fn delete_artifact(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_artifact(&id, Origin::User).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}
