//! Local data: the person's projects, manuscripts, plots and memories, the
//! agent's session artifacts, checkpoints, revisions and settings.
//!
//! [`Db`] is the typed API over a [`Backend`]: [`MemoryBackend`] natively,
//! IndexedDB in the browser (`IdbBackend`). Writes that belong together go in
//! one atomic batch; the agent's changes keep the previous version as a
//! revision so [`Db::undo_last`] restores it byte for byte.

mod artifacts;
mod backend;
mod blobs;
mod checkpoints;
mod db;
mod error;
mod grants;
mod history;
mod memories;
mod model;
pub(crate) mod order;
mod projects;
mod receipts;
pub mod schema;
mod search;
mod sessions;
mod tree;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod idb;

pub use artifacts::{check_lifecycle, resolve};
pub use backend::{key_of, Backend, Guard, MemoryBackend, Write};
pub use checkpoints::StoreCheckpointer;
pub use db::{Db, Origin};
pub use error::{Result, StoreError};
pub use grants::Grant;
#[cfg(test)]
pub(crate) use history::fingerprint as history_fingerprint;
pub use history::{RevisionInfo, KEEP_PER_RECORD};
#[cfg(all(target_arch = "wasm32", target_os = "unknown", feature = "test-hooks"))]
pub use idb::testing as idb_testing;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use idb::IdbBackend;
pub use model::*;
pub use receipts::{Receipt, ReceiptOutcome};
pub use search::{doc_key, doc_of, SearchAnswer, SearchIndex, SearchStatus, SEARCHED};

/// The pseudo-session that holds a project's continuity notes (artifacts
/// whose `sessionId` this is; they go when the project is deleted).
pub fn continuity_session(project_id: &str) -> String {
    format!("continuity:{project_id}")
}

#[cfg(test)]
pub(crate) mod racing;
#[cfg(test)]
mod tests;
