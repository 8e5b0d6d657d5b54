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
        GraphBench {
            graph: workload::build(turns),
            turns,
        }
    }

    /// Runs `runs` runs; returns the final message count (must be 22).
    pub async fn pass(&self, runs: u32, checkpointed: bool) -> Result<u32, JsValue> {
        workload::pass(&self.graph, runs, self.turns, checkpointed)
            .await
            .map(|n| n as u32)
            .map_err(|e| JsValue::from(js_sys::Error::new(&e)))
    }
}
