//! `agent.search` and `agent.searchStatus`: the local search index (the
//! logic is `crate::search` and `store::search`; this only converts).

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::agent::{future_to_promise, JsAgent};
use super::convert::to_js;
use super::error;
use crate::search::SearchOptions;

#[wasm_bindgen(typescript_custom_section)]
const TS_SEARCH: &'static str = r#"
/** What `search` looks at: the kinds (default all), one project's records, one session's. */
export interface SearchOptions {
  scope?: ("manuscripts" | "plot" | "artifacts" | "memories" | "transcripts")[];
  /** Only this project's chapters, plot items and continuity notes. */
  projectId?: string;
  /** Only this session's artifacts and transcript. */
  sessionId?: string;
  /** At most this many hits (default 10, at most 100). */
  limit?: number;
}
/** One hit, best first. */
export interface SearchHit {
  kind: "manuscript" | "plot" | "artifact" | "memory" | "transcript";
  /** The record's id (a chapter's, a plot item's, an artifact's, a memory's, a transcript entry's). */
  id: string;
  /** The record's title (a memory: its date and tags; a transcript entry: its session's title). */
  title: string;
  /** About 160 characters of the text around the hit, cut on grapheme boundaries ("…" where cut). */
  snippet: string;
  score: number;
  projectId?: string;
  sessionId?: string;
  /** Where the hit stands in the record's text (`content`, `summary` or `text`), in UTF-16 units; absent when only the title matched. */
  start?: number;
  end?: number;
}
/** The hits, and whether every stored record was searched (`pending`: records still being indexed). */
export type SearchResults = SearchHit[] & { complete: boolean; pending: number };
/** Where the search index stands. */
export interface SearchStatus { indexed: number; pending: number; complete: boolean }
"#;

#[wasm_bindgen]
extern "C" {
    /// `SearchOptions` as it arrives from JS.
    #[wasm_bindgen(typescript_type = "SearchOptions")]
    pub type SearchOptionsJs;
}

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Finds `query` in the person's chapters and plot, the sessions'
    /// artifacts and transcripts, and long-term memories, offline. An empty
    /// query rejects with `invalid_argument`.
    ///
    /// ```js
    /// const hits = await agent.search("砂時計", { scope: ["manuscripts"], projectId });
    /// hits[0]; // { kind: "manuscript", id, title: "第三章", snippet: "…机の上の砂時計が…", start: 412, end: 415, ... }
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Promise<SearchResults>")]
    pub fn search(&self, query: String, opts: Option<SearchOptionsJs>) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let opts = opts.map(JsValue::from).unwrap_or(JsValue::UNDEFINED);
            let options = super::convert::value_from_js("search options", opts)?;
            let options =
                SearchOptions::from_value(&options).map_err(|e| error::invalid_argument("search options", e))?;
            let answer = db.search(&query, &options).await.map_err(error::store)?;
            let hits = to_js(&answer.hits)?;
            Reflect::set(&hits, &"complete".into(), &answer.status.complete.into())?;
            Reflect::set(&hits, &"pending".into(), &(answer.status.pending as u32).into())?;
            Ok(hits)
        })
    }

    /// Where the search index stands (records indexed, waiting, all done).
    #[wasm_bindgen(js_name = searchStatus, unchecked_return_type = "SearchStatus")]
    pub fn search_status(&self) -> Result<JsValue, JsValue> {
        to_js(&self.db.search_status())
    }
}
