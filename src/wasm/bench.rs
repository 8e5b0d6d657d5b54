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

/// The "store" workload on our IndexedDB backend (a database of its own).
#[wasm_bindgen]
pub struct StoreBench {
    backend: crate::store::IdbBackend,
}

#[wasm_bindgen]
impl StoreBench {
    /// Deletes `name` if it exists and opens it fresh at the current schema.
    pub async fn open(name: String) -> Result<StoreBench, JsValue> {
        let _ = crate::store::IdbBackend::delete(&name).await;
        let backend = crate::store::IdbBackend::open(&name).await.map_err(error)?;
        Ok(StoreBench { backend })
    }

    /// Puts every record in one transaction (artifacts of a batch this size
    /// leave their index to the session's first read).
    #[wasm_bindgen(js_name = bulkPut)]
    pub fn bulk_put(&self, records: js_sys::Array) -> Result<js_sys::Promise, JsValue> {
        self.backend.issue_put_js(crate::store::stores::ARTIFACTS, &records).map_err(error)
    }

    /// Puts one record (with its index fields) in its own transaction.
    pub fn put(&self, record: JsValue) -> Result<js_sys::Promise, JsValue> {
        self.backend.issue_put_js(crate::store::stores::ARTIFACTS, &record).map_err(error)
    }

    /// The snippet index of the session's active artifacts.
    #[wasm_bindgen(js_name = snippetIndex)]
    pub async fn snippet_index(&self, session: String, chars: u32) -> Result<String, JsValue> {
        use crate::store::Backend;
        let entries = self.backend.artifact_index(&session, true).await.map_err(error)?;
        let mut out = String::with_capacity(entries.len() * (chars as usize + 80));
        for entry in &entries {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            crate::context::snippet_entry(&mut out, &entry.id, &entry.title, &entry.snippet, chars as usize);
        }
        Ok(out)
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
