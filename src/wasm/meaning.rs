//! Search by meaning in the browser: the vectors and the query's ranking
//! live in `js/meaning.js` (fetch, IndexedDB, the cosines); this side
//! decides what is embedded — the search index's documents, cut into
//! passages by `search::meaning` — and hands the ranking to the search,
//! which fuses it with the words' (`agent.search`).

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::search::meaning::Ranked;
use crate::store::Db;

#[wasm_bindgen(module = "/src/wasm/js/meaning.js")]
extern "C" {
    #[derive(Clone)]
    pub type Meaning;
    #[wasm_bindgen(constructor)]
    pub fn new(database: &str, base: &str, token: Option<String>) -> Meaning;
    #[wasm_bindgen(method)]
    fn wanted(this: &Meaning, edits: f64) -> bool;
    #[wasm_bindgen(method)]
    fn missing(this: &Meaning, keys: &Array, hashes: &[f64], edits: f64) -> Array;
    #[wasm_bindgen(method)]
    fn keep(this: &Meaning, docs: &Array);
    #[wasm_bindgen(method)]
    fn rank(this: &Meaning, query: &str, limit: u32) -> Option<Promise>;
}

/// The strings as a JS array.
fn strings(items: &[String]) -> Array {
    items.iter().map(|s| JsValue::from_str(s)).collect()
}

impl Meaning {
    /// The meaning ranking of `query` (`None`: no embedding model, the
    /// proxy unreachable, nothing embedded yet).
    pub async fn ranking(&self, query: &str, limit: usize) -> Option<Ranked> {
        let found = JsFuture::from(self.rank(query, limit as u32)?).await.ok()?;
        let found: Array = found.dyn_into().ok()?;
        let keys = Array::from(&found.get(0)).iter().filter_map(|k| k.as_string()).collect();
        let passages = Array::from(&found.get(1)).iter().map(|p| p.as_f64().unwrap_or(0.0) as u32).collect();
        Some(Ranked { keys, passages })
    }

    /// Hands the documents whose vectors are missing or stale to the JS
    /// side, which embeds them in the background (once the index holds
    /// every record, and only when it changed since the last complete
    /// pass; never on a write's path).
    pub fn refresh(&self, db: &Db) {
        let Some(index) = db.backend().search_index() else { return };
        let Some(edits) = index.edits().map(|n| n as f64) else { return };
        if !self.wanted(edits) {
            return;
        }
        let (keys, hashes) = index.fingerprints();
        let docs = Array::new();
        for at in self.missing(&strings(&keys), &hashes, edits).iter().filter_map(|i| i.as_f64()) {
            let at = at as usize;
            if let Some(texts) = keys.get(at).and_then(|key| index.passage_texts(key)) {
                docs.push(&Array::of3(&JsValue::from_str(&keys[at]), &hashes[at].into(), &strings(&texts)));
            }
        }
        self.keep(&docs);
    }
}
