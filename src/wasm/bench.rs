//! Exports for the shared browser benchmark (`--features bench` only): the
//! page module in benches/browser/ times these calls.

use wasm_bindgen::prelude::*;

use crate::graph::workload::{self, BenchState};
use crate::graph::CompiledGraph;

/// The "graph" workload, built once per pass (building is not timed).
#[wasm_bindgen]
pub struct GraphBench {
    graph: CompiledGraph<BenchState>,
    turns: u32,
}

#[wasm_bindgen]
impl GraphBench {
    /// Builds the workload graph for `turns` tool rounds.
    #[wasm_bindgen(constructor)]
    pub fn new(turns: u32) -> GraphBench {
        GraphBench { graph: workload::build(turns), turns }
    }

    /// Runs `runs` runs; returns the final message count (must be 22).
    pub async fn pass(&self, runs: u32, checkpointed: bool) -> Result<u32, JsValue> {
        workload::pass(&self.graph, runs, self.turns, checkpointed)
            .await
            .map(|n| n as u32)
            .map_err(|e| JsValue::from(js_sys::Error::new(&e)))
    }

    /// Runs `runs` runs with every checkpoint persisted to IndexedDB
    /// (database `db_name`, deleted first and after).
    #[wasm_bindgen(js_name = passPersisted)]
    pub async fn pass_persisted(&self, runs: u32, db_name: String) -> Result<u32, JsValue> {
        let _ = crate::store::IdbBackend::delete(&db_name).await;
        let backend = std::rc::Rc::new(crate::store::IdbBackend::open(&db_name).await.map_err(error)?);
        let saver = crate::store::StoreCheckpointer::<BenchState>::new(
            backend.clone(),
            crate::graph::PrunePolicy { keep_per_thread: usize::MAX },
        );
        let out = workload::pass_with(&self.graph, runs, self.turns, &saver).await.map(|n| n as u32).map_err(error);
        backend.close();
        let _ = crate::store::IdbBackend::delete(&db_name).await;
        out
    }
}

/// A store or graph error as a JS `Error`.
fn error(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

/// The "store" workload through the agent's own write path: `Db` over the
/// IndexedDB backend, records converted and validated as `importArtifacts`
/// does (a database of its own).
#[wasm_bindgen]
pub struct StoreBench {
    backend: std::rc::Rc<crate::store::IdbBackend>,
    db: crate::store::Db,
}

#[wasm_bindgen]
impl StoreBench {
    /// Deletes `name` if it exists and opens it fresh at the current schema.
    pub async fn open(name: String) -> Result<StoreBench, JsValue> {
        let _ = crate::store::IdbBackend::delete(&name).await;
        let backend = std::rc::Rc::new(crate::store::IdbBackend::open(&name).await.map_err(error)?);
        let db = crate::store::Db::new(backend.clone());
        Ok(StoreBench { backend, db })
    }

    /// Imports the records in one transaction, as `Agent.importArtifacts`
    /// does (a batch this size leaves its index to the session's first read).
    #[wasm_bindgen(js_name = bulkPut)]
    pub async fn bulk_put(&self, records: JsValue) -> Result<u32, JsValue> {
        let records = super::convert::items_from_js("an array of artifacts", records)?;
        Ok(self.db.import_artifacts(records).await.map_err(error)? as u32)
    }

    /// Writes one record (with its index fields) in its own transaction.
    pub async fn put(&self, record: JsValue) -> Result<u32, JsValue> {
        let record = super::convert::value_from_js("an artifact", record)?;
        Ok(self.db.import_artifacts(vec![record]).await.map_err(error)? as u32)
    }

    /// The snippet index of the session's active artifacts, from the index
    /// entries the agent reads before a model call (in id order, as the
    /// workload asks; the agent then sorts them newest first).
    #[wasm_bindgen(js_name = snippetIndex)]
    pub async fn snippet_index(&self, session: String, chars: u32) -> Result<String, JsValue> {
        let entries = self.db.backend().artifact_index(&session, true).await.map_err(error)?;
        let mut out = String::with_capacity(entries.len() * (chars as usize + 80));
        for entry in &entries {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            crate::context::snippet_entry(&mut out, &entry.id, &entry.title, &entry.snippet, chars as usize);
        }
        Ok(out)
    }

    /// Creates a project with one chapter for [`StoreBench::save_section`]; returns the chapter's id.
    #[wasm_bindgen(js_name = addChapter)]
    pub async fn add_chapter(&self) -> Result<String, JsValue> {
        let project = self.db.create_project("Bench", "").await.map_err(error)?;
        Ok(self.db.add_section(&project.id, None, "Chapter 1", "").await.map_err(error)?.id)
    }

    /// The person's save of a chapter, as `Agent.saveSection` makes it
    /// (checks, a revision, strict durability).
    #[wasm_bindgen(js_name = saveSection)]
    pub async fn save_section(&self, id: String, content: String) -> Result<(), JsValue> {
        let mut section = self.db.section(&id).await.map_err(error)?;
        section.content = content;
        self.db.edit_section_as_person(section).await.map(|_| ()).map_err(error)
    }

    /// Waits until the search index has every record and has stored every
    /// segmentation; returns the records indexed.
    #[wasm_bindgen(js_name = searchSettled)]
    pub async fn search_settled(&self) -> Result<u32, JsValue> {
        Ok(self.db.search_settled().await.map_err(error)?.indexed as u32)
    }

    /// Records in the artifacts store.
    pub async fn count(&self) -> Result<u32, JsValue> {
        self.backend.count(crate::store::stores::ARTIFACTS).await.map_err(error)
    }

    /// Closes the connection.
    pub fn close(&self) {
        self.backend.close();
    }
}
