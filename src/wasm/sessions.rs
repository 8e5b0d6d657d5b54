//! Sessions: the list, a session's transcript, renaming and deleting.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::agent::{future_to_promise, JsAgent};
use super::convert::to_js;
use super::error;

#[wasm_bindgen(typescript_custom_section)]
const TS_SESSIONS: &'static str = r#"
/** A chat session (its artifacts, checkpoints and transcript share its id). */
export interface SessionInfo {
  id: string;
  /** The first line of its first message, until renamed. */
  title: string;
  createdAt: number;
  updatedAt: number;
}
/** One message as the conversation showed it. */
export interface TranscriptEntry {
  id: string;
  sessionId: string;
  role: "person" | "agent";
  /** The person's input, or the agent's Markdown stream for the turn. */
  text: string;
  /**
   * For the agent: "completed", or "interrupted" while a review waits; for
   * the person's words added while a run worked (`interject`): "interjection".
   */
  status?: "completed" | "interrupted" | "interjection";
  createdAt: number;
}
"#;

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Every session, most recently used first (a session appears with its
    /// first message).
    #[wasm_bindgen(unchecked_return_type = "Promise<SessionInfo[]>")]
    pub fn sessions(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.sessions().await.map_err(error::store)?) })
    }

    /// A session's messages as the conversation showed them, oldest first.
    #[wasm_bindgen(unchecked_return_type = "Promise<TranscriptEntry[]>")]
    pub fn transcript(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.transcript(&session_id).await.map_err(error::store)?) })
    }

    /// Renames a session.
    #[wasm_bindgen(js_name = renameSession, unchecked_return_type = "Promise<void>")]
    pub fn rename_session(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String, title: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.rename_session(&session_id, &title).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The tools the person approved for the rest of the session ("approve
    /// for this session" in a review), by tool name.
    #[wasm_bindgen(unchecked_return_type = "Promise<Grant[]>")]
    pub fn grants(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.grants(&session_id).await.map_err(error::store)?) })
    }

    /// Ends the session's grant of `tool`: its next call is reviewed again.
    #[wasm_bindgen(js_name = revokeGrant, unchecked_return_type = "Promise<void>")]
    pub fn revoke_grant(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String, tool: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.revoke_grant(&session_id, &tool).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a session with its transcript, artifacts, checkpoints and grants.
    #[wasm_bindgen(js_name = deleteSession, unchecked_return_type = "Promise<void>")]
    pub fn delete_session(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_session(&session_id).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}
