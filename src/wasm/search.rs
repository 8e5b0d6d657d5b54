//! `agent.search` and `agent.searchStatus`: the local search index (the
//! logic is `crate::search` and `store::search`; this only converts).

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::agent::{future_to_promise, JsAgent};
use super::error;
use crate::search::{Hit, SearchError, SearchOptions};
use crate::store::SearchStatus;

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
  /** Found by meaning only (none of the query's words in it): `start`/`end` are then its closest passage. */
  byMeaning?: true;
}
/**
 * The hits, and whether every stored record was searched (`pending`: records still being indexed);
 * `meaning`: the proxy's embedding model ranked them too (fused with the words' ranking).
 */
export type SearchResults = SearchHit[] & { complete: boolean; pending: number; meaning: boolean };
/** Where the search index stands. */
export interface SearchStatus { indexed: number; pending: number; complete: boolean }
"#;

#[wasm_bindgen(module = "/src/wasm/js/shape.js")]
extern "C" {
    /// The options read and checked (see `shape.js`).
    #[wasm_bindgen(js_name = searchOptions)]
    fn search_options(options: &JsValue) -> JsValue;
    /// The hits as JS objects, from one text and its numbers (see `shape.js`).
    #[wasm_bindgen(js_name = searchHits)]
    fn search_hits(texts: &str, numbers: &[f64], complete: bool, pending: u32, meaning: bool) -> JsValue;
}

/// `agent.search`'s options, checked in JS.
fn options(given: &JsValue) -> Result<SearchOptions, JsValue> {
    let read = search_options(given);
    if let Some(field) = read.as_string() {
        return Err(error::invalid_argument("search options", SearchError::Options(field)));
    }
    let read = js_sys::Array::from(&read);
    Ok(SearchOptions {
        scope: js_sys::Array::from(&read.get(0)).iter().filter_map(|s| s.as_string()).collect(),
        project_id: read.get(1).as_string(),
        session_id: read.get(2).as_string(),
        limit: read.get(3).as_f64(),
        meaning: None,
    })
}

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
        let (db, meaning, agent) = (self.db.clone(), self.meaning.clone(), self.agent.clone());
        future_to_promise(async move {
            let mut options = options(&opts.map(JsValue::from).unwrap_or(JsValue::UNDEFINED))?;
            let by_meaning = agent.env().settings.borrow().search_by_meaning;
            if by_meaning && !query.trim().is_empty() {
                options.meaning = meaning.ranking(&query, options.limit()).await;
            }
            let answer = db.search(&query, &options).await.map_err(error::store)?;
            // What was written since is embedded for the next search.
            if by_meaning {
                meaning.refresh(&db);
            }
            let (texts, numbers) = hit_fields(&answer.hits);
            let status = answer.status;
            Ok(search_hits(&texts, &numbers, status.complete, status.pending as u32, options.meaning.is_some()))
        })
    }

    /// Where the search index stands (records indexed, waiting, all done).
    #[wasm_bindgen(js_name = searchStatus, unchecked_return_type = "SearchStatus")]
    pub fn search_status(&self) -> JsValue {
        self.db.search_status().map_or(JsValue::NULL, |s: SearchStatus| {
            object(&[
                ("indexed", (s.indexed as u32).into()),
                ("pending", (s.pending as u32).into()),
                ("complete", s.complete.into()),
                ("segmented", (s.segmented as u32).into()),
                ("longestSliceMs", s.longest_slice_ms.into()),
            ])
        })
    }
}

/// A JS object of these fields (an absent one left out): what the results
/// are, written out here instead of through a serde encoder per type.
fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = js_sys::Object::new();
    for (name, value) in fields {
        if !value.is_undefined() {
            let _ = Reflect::set(&object, &(*name).into(), value);
        }
    }
    object.into()
}

/// What [`search_hits`] builds the hits from: ten numbers a hit (its
/// texts' UTF-16 lengths, its score, offsets and whether only its meaning
/// matched; -1 for what is absent),
/// the texts one after the other.
fn hit_fields(hits: &[Hit]) -> (String, Vec<f64>) {
    let mut texts = String::new();
    let mut numbers = Vec::with_capacity(hits.len() * 10);
    for hit in hits {
        let mut text = |t: Option<&str>| {
            t.map_or(-1.0, |t| {
                texts.push_str(t);
                f64::from(crate::search::utf16_len(t))
            })
        };
        let offset = |n: Option<u32>| n.map_or(-1.0, f64::from);
        numbers.extend([
            text(Some(hit.kind.name())),
            text(Some(&hit.id)),
            text(Some(&hit.title)),
            text(Some(&hit.snippet)),
            hit.score.max(0.0),
            text(hit.project_id.as_deref()),
            text(hit.session_id.as_deref()),
            offset(hit.start),
            offset(hit.end),
            if hit.by_meaning { 1.0 } else { -1.0 },
        ]);
    }
    (texts, numbers)
}
