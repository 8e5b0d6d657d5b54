//! Long-term memories, by date.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::agent::{future_to_promise, JsAgent};
use super::convert::to_js;
use super::error;

#[wasm_bindgen(typescript_custom_section)]
const TS_MEMORIES: &'static str = r#"
export interface Memory { id: string; date: string; summary: string; tags: string[]; createdAt: number }
"#;

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Dates (YYYY-MM-DD) that have long-term memories.
    #[wasm_bindgen(js_name = memoryDates, unchecked_return_type = "Promise<string[]>")]
    pub fn memory_dates(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.memory_dates().await.map_err(error::store)?) })
    }

    /// Memories from `start` to `end` (inclusive, YYYY-MM-DD).
    #[wasm_bindgen(unchecked_return_type = "Promise<Memory[]>")]
    pub fn memories(&self, start: String, end: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.memories_between(&start, &end).await.map_err(error::store)?) })
    }
}
