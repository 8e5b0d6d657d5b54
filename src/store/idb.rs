//! IndexedDB backend (browser only), straight on web-sys: one transaction
//! per atomic batch, every request of a batch issued at once and the batch
//! awaited on the transaction's `complete` (or rolled back on `abort`).
//!
//! Written on web-sys rather than rexie: the batch path issues puts without
//! awaiting each one, and the benchmark path hands JS objects to IndexedDB
//! without a round trip through Rust values; both need the raw requests.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use async_trait::async_trait;
use js_sys::{Array, Promise};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    IdbDatabase, IdbObjectStoreParameters, IdbOpenDbRequest, IdbRequest, IdbTransaction, IdbTransactionMode,
    IdbVersionChangeEvent,
};

use super::backend::{index_from_records, Backend, Write};
use super::error::{Result, StoreError};
use super::model::stores::{ARTIFACTS, INDEX_STALE, SNIPPETS};
use super::model::{ArtifactSnippet, INDEX_FIELD, SNIPPET_CHARS};
use super::schema::{self, Migration, VERSIONS};

/// Batches with at least this many artifact puts write the records without
/// their index fields and mark the sessions stale instead: the session's
/// first index read adds them (see `IdbBackend::artifact_index`). A bulk
/// import then costs what the raw records cost, and an agent's single writes
/// keep the index current as they go.
pub const LAZY_INDEX_BATCH: usize = 256;

/// The IndexedDB database of atelier-agent.
pub struct IdbBackend {
    db: IdbDatabase,
    /// Set when another tab's upgrade made this connection close: every
    /// later call is `reload_required` instead of a DOMException.
    closed_for_upgrade: Rc<Cell<bool>>,
    /// Test hook: the next batch fails after its first request with this
    /// DOMException name (and is rolled back).
    fail_next: RefCell<Option<String>>,
    artifacts: ArtifactWriter,
}

fn describe(e: &JsValue) -> (String, String) {
    if let Some(ex) = e.dyn_ref::<web_sys::DomException>() {
        return (ex.name(), ex.message());
    }
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return (String::from(err.name()), String::from(err.message()));
    }
    (String::new(), e.as_string().unwrap_or_else(|| format!("{e:?}")))
}

/// Maps a DOMException (or any JS error) to a typed storage error.
pub(crate) fn store_error(e: &JsValue) -> StoreError {
    let (name, message) = describe(e);
    match name.as_str() {
        "QuotaExceededError" => StoreError::QuotaExceeded(message),
        "DataCloneError" | "DataError" => StoreError::Codec { store: String::new(), detail: message },
        _ if name.is_empty() => StoreError::Backend(message),
        _ => StoreError::Backend(format!("{name}: {message}")),
    }
}

/// A promise settled by a request's success (with its result) or error.
fn request_done(request: &IdbRequest) -> JsFuture {
    let request = request.clone();
    JsFuture::from(Promise::new(&mut |resolve, reject| {
        let r = request.clone();
        let ok = Closure::once_into_js(move || {
            let _ = resolve.call1(&JsValue::NULL, &r.result().unwrap_or(JsValue::UNDEFINED));
        });
        let r = request.clone();
        let fail = Closure::once_into_js(move || {
            let error =
                r.error().ok().flatten().map(JsValue::from).unwrap_or_else(|| JsValue::from_str("request failed"));
            let _ = reject.call1(&JsValue::NULL, &error);
        });
        request.set_onsuccess(Some(ok.unchecked_ref()));
        request.set_onerror(Some(fail.unchecked_ref()));
    }))
}

/// A promise settled when a transaction completes (or aborts, with its error).
fn transaction_done(tx: &IdbTransaction) -> JsFuture {
    JsFuture::from(transaction_promise(tx))
}

/// Asks the transaction to commit now rather than when the event loop is
/// idle (web-sys marks `commit` deprecated; browsers without it simply
/// auto-commit, so a failure here is ignored).
#[allow(deprecated)]
fn commit(tx: &IdbTransaction) {
    let _ = tx.commit();
}

fn to_js(value: &Value) -> Result<JsValue> {
    js_sys::JSON::parse(&value.to_string()).map_err(|e| store_error(&e))
}

/// A stored record as the rest of the code sees it (artifacts without their
/// storage-only index field).
fn from_js(store: &str, value: JsValue) -> Result<Value> {
    let text = js_sys::JSON::stringify(&value).map_err(|e| store_error(&e))?;
    let mut value: Value = serde_json::from_str(&String::from(text))
        .map_err(|e| StoreError::Codec { store: store.to_owned(), detail: e.to_string() })?;
    if store == ARTIFACTS {
        if let Some(record) = value.as_object_mut() {
            record.remove(INDEX_FIELD);
        }
    }
    Ok(value)
}

/// IndexedDB version of schema version `n`: Dexie stores its version `n` as
/// `n * 10`, so we do too; a database a Dexie app created at version 1 then
/// upgrades cleanly to ours.
pub const IDB_VERSION_FACTOR: u32 = 10;

/// Creates what every version after `old` adds (runs inside `upgradeneeded`).
fn upgrade(request: &IdbOpenDbRequest, old_idb_version: u32, new_idb_version: u32) -> std::result::Result<(), JsValue> {
    let old = old_idb_version / IDB_VERSION_FACTOR;
    let new = new_idb_version / IDB_VERSION_FACTOR;
    let db: IdbDatabase = request.result()?.unchecked_into();
    let tx = request.transaction().ok_or_else(|| JsValue::from_str("no upgrade transaction"))?;
    for version in VERSIONS.iter().filter(|v| v.number > old && v.number <= new) {
        for spec in version.stores {
            let params = IdbObjectStoreParameters::new();
            params.set_key_path(&JsValue::from_str(spec.key_path));
            let store = db.create_object_store_with_optional_parameters(spec.name, &params)?;
            for (name, path) in spec.indexes {
                create_index(&store, name, path)?;
            }
        }
        for (store, name, path) in version.indexes {
            create_index(&tx.object_store(store)?, name, path)?;
        }
        for migration in version.migrations {
            // A store a later version of this same upgrade removes is not filled.
            let removed_later = VERSIONS
                .iter()
                .any(|v| v.number > version.number && v.number <= new && v.removes.contains(&migration.target()));
            if removed_later {
                continue;
            }
            match migration {
                Migration::SnippetsFromArtifacts => snippets_from_artifacts(&tx)?,
                Migration::IndexArtifacts => {
                    let store = tx.object_store(ARTIFACTS)?;
                    let request = store.get_all()?;
                    index_on_success(&request, store, None);
                }
            }
        }
        for store in version.removes {
            if db.object_store_names().contains(store) {
                db.delete_object_store(store)?;
            }
        }
    }
    Ok(())
}

/// When `request` (a `getAll` of artifact records) succeeds, puts every
/// record back with its index fields, and then deletes `marker` (a session's
/// stale mark) if given: all inside the request's transaction.
fn index_on_success(
    request: &IdbRequest,
    store: web_sys::IdbObjectStore,
    marker: Option<(web_sys::IdbObjectStore, String)>,
) {
    let reader = request.clone();
    let fill = Closure::once_into_js(move || {
        if let Ok(all) = reader.result() {
            for record in all.unchecked_into::<Array>().iter() {
                let _ = store.put(&with_index_js(&record));
            }
        }
        if let Some((stale, session)) = marker {
            let _ = stale.delete(&JsValue::from_str(&session));
        }
    });
    request.set_onsuccess(Some(fill.unchecked_ref()));
}

/// Fills the snippet store from every artifact (in the upgrade transaction).
fn snippets_from_artifacts(tx: &IdbTransaction) -> std::result::Result<(), JsValue> {
    let request = tx.object_store(ARTIFACTS)?.get_all()?;
    let snippets = tx.object_store(SNIPPETS)?;
    let reader = request.clone();
    let fill = Closure::once_into_js(move || {
        if let Ok(all) = reader.result() {
            for record in all.unchecked_into::<Array>().iter() {
                if let Ok(entry) = snippet_js(&record) {
                    let _ = snippets.put(&entry);
                }
            }
        }
    });
    request.set_onsuccess(Some(fill.unchecked_ref()));
    Ok(())
}

#[wasm_bindgen(inline_js = r#"
export function contentHead(record, units) {
  const c = record.content;
  if (typeof c !== "string") return "";
  // Never end on half a surrogate pair (it would cross as U+FFFD).
  const end = units < c.length && (c.charCodeAt(units - 1) & 0xfc00) === 0xd800 ? units + 1 : units;
  return c.substring(0, end);
}
export function snippetEntry(record, snippet) {
  const c = record.content;
  return { id: record.id, sessionId: record.sessionId, active: record.isActive === true ? 1 : 0, title: record.title,
           snippet, length: typeof c === "string" ? c.length : 0, createdAt: record.createdAt };
}
// An inactive artifact's index fields carry no snippet, so it has no
// `bySessionActive` entry: the index holds what the agent injects.
export function withIndex(record, snippetUnits) {
  const c = typeof record.content === "string" ? record.content : "";
  const _index = record.isActive === true ? { active: 1, snippet: c.substring(0, snippetUnits), length: c.length }
                                          : { active: 0, length: c.length };
  return { ...record, _index };
}
export function withoutIndex(record) {
  if (record === null || typeof record !== "object" || !("_index" in record)) return record;
  const { _index, ...rest } = record;
  return rest;
}
// Two characters between which UAX #29 always breaks (GB999 only): printable
// ASCII, kana, CJK ideographs and common CJK/fullwidth punctuation.
const SIMPLE_PAIR = /^[\x20-\x7E\u3001-\u3003\u300C-\u300F\u3041-\u3096\u30A1-\u30FA\u30FC-\u30FE\u4E00-\u9FFF\uFF01-\uFF5E]{2}$/;
const SURROGATE = /[\uD800-\uDFFF]/;
// The snippet's length in UTF-16 units when it is plain to see (an inactive
// artifact has none; short content, or a cut between two such characters with
// no surrogate before it); -1 when the grapheme rules must decide (in Rust).
export function quickSnippetUnits(record, chars) {
  const c = record.content;
  if (typeof c !== "string" || record.isActive !== true) return 0;
  if (c.length <= chars) return c.length;
  if (SURROGATE.test(c.substring(0, chars + 1))) return -1;
  return SIMPLE_PAIR.test(c.substring(chars - 1, chars + 1)) ? chars : -1;
}
function settle(tx) {
  const done = transactionPromise(tx);
  done.catch(() => {});
  return done;
}
// One readwrite transaction putting `records` (with their index fields when
// `units` gives each snippet's length), committed at once; throws (after
// aborting) when a put is refused.
export function putRecords(db, storeName, records, units) {
  const tx = db.transaction(storeName, "readwrite");
  const done = settle(tx);
  try {
    const store = tx.objectStore(storeName);
    for (let i = 0; i < records.length; i++) store.put(units === undefined ? records[i] : withIndex(records[i], units[i]));
  } catch (e) {
    tx.abort();
    throw e;
  }
  if (typeof tx.commit === "function") tx.commit();
  return done;
}
// The artifact store's write path, bound once per connection so a put is
// one call from WASM with no string crossing.
export class ArtifactWriter {
  constructor(db, storeName, staleName, chars, lazyBatch) {
    Object.assign(this, { db, storeName, staleName, chars, lazyBatch });
  }
  // Issues the put of `records` (an array, or one record) and returns the
  // transaction's promise; null (nothing issued) when some snippet cut needs
  // the grapheme rules.
  put(records) {
    const list = Array.isArray(records) ? records : [records];
    if (list.length >= this.lazyBatch) return putUnindexed(this.db, this.storeName, this.staleName, list);
    const units = new Array(list.length);
    for (let i = 0; i < list.length; i++) {
      units[i] = quickSnippetUnits(list[i], this.chars);
      if (units[i] < 0) return null;
    }
    return putRecords(this.db, this.storeName, list, units);
  }
}
// The bulk path: records as they are, their sessions marked stale.
export function putUnindexed(db, storeName, staleName, records) {
  const tx = db.transaction([storeName, staleName], "readwrite");
  const done = settle(tx);
  try {
    const store = tx.objectStore(storeName);
    const sessions = new Set();
    for (const r of records) {
      store.put(withoutIndex(r));
      if (r !== null && typeof r === "object" && typeof r.sessionId === "string") sessions.add(r.sessionId);
    }
    const stale = tx.objectStore(staleName);
    for (const sessionId of sessions) stale.put({ sessionId });
  } catch (e) {
    tx.abort();
    throw e;
  }
  if (typeof tx.commit === "function") tx.commit();
  return done;
}
export function transactionPromise(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new DOMException("transaction aborted", "AbortError"));
    tx.onerror = () => reject(tx.error ?? new DOMException("transaction failed", "UnknownError"));
  });
}
export function indexKeys(index, lower, upper) {
  return new Promise((resolve, reject) => {
    const keys = [];
    const request = index.openKeyCursor(IDBKeyRange.bound(lower, upper));
    request.onsuccess = () => {
      const cursor = request.result;
      if (cursor === null) { resolve(keys); return; }
      keys.push(cursor.key);
      cursor.continue();
    };
    request.onerror = () => reject(request.error);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = contentHead)]
    fn content_head(record: &JsValue, units: u32) -> String;
    #[wasm_bindgen(js_name = snippetEntry)]
    fn snippet_entry_js(record: &JsValue, snippet: &str) -> JsValue;
    #[wasm_bindgen(js_name = withIndex)]
    fn with_index_fields(record: &JsValue, snippet_units: u32) -> JsValue;
    #[wasm_bindgen(js_name = withoutIndex)]
    fn without_index_js(record: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = quickSnippetUnits)]
    fn quick_snippet_units(record: &JsValue, chars: u32) -> i32;
    #[wasm_bindgen(js_name = putRecords, catch)]
    fn put_records(db: &IdbDatabase, store: &str, records: &Array) -> std::result::Result<Promise, JsValue>;
    #[wasm_bindgen(js_name = putRecords, catch)]
    fn put_records_indexed(
        db: &IdbDatabase,
        store: &str,
        records: &Array,
        units: &[u32],
    ) -> std::result::Result<Promise, JsValue>;
    type ArtifactWriter;
    #[wasm_bindgen(constructor)]
    fn new(db: &IdbDatabase, store: &str, stale: &str, chars: u32, lazy_batch: u32) -> ArtifactWriter;
    #[wasm_bindgen(method, catch)]
    fn put(this: &ArtifactWriter, records: &JsValue) -> std::result::Result<Option<Promise>, JsValue>;
    #[wasm_bindgen(js_name = transactionPromise)]
    fn transaction_promise(tx: &IdbTransaction) -> Promise;
    #[wasm_bindgen(js_name = indexKeys, catch)]
    fn index_keys(index: &web_sys::IdbIndex, lower: &Array, upper: &Array) -> std::result::Result<Promise, JsValue>;
}

/// The snippet of a JS artifact record; only the start of the content
/// crosses into WASM.
fn snippet_of_js(record: &JsValue) -> String {
    // A little past the cut covers the grapheme check; content outside the
    // BMP (two units a character) needs the longer head.
    let mut head = content_head(record, (SNIPPET_CHARS + 16) as u32);
    if head.chars().count() <= SNIPPET_CHARS && head.encode_utf16().count() >= SNIPPET_CHARS + 16 {
        head = content_head(record, (SNIPPET_CHARS * 2 + 16) as u32);
    }
    crate::context::snippet(&head, SNIPPET_CHARS).to_owned()
}

/// The schema v3 snippet-store entry of a JS artifact record.
fn snippet_js(record: &JsValue) -> std::result::Result<JsValue, JsValue> {
    Ok(snippet_entry_js(record, &snippet_of_js(record)))
}

/// The length in UTF-16 units of a JS artifact record's snippet (a prefix of
/// its content): worked out in JS when the cut is plainly a grapheme
/// boundary, else by the grapheme rules in Rust.
fn snippet_units_js(record: &JsValue) -> u32 {
    match quick_snippet_units(record, SNIPPET_CHARS as u32) {
        units @ 0.. => units as u32,
        _ => snippet_of_js(record).encode_utf16().count() as u32,
    }
}

/// A copy of a JS artifact record with its index fields (the snippet is cut
/// in JS, so no string crosses back).
fn with_index_js(record: &JsValue) -> JsValue {
    with_index_fields(record, snippet_units_js(record))
}

/// An index key of `bySessionActive` (see `schema::ARTIFACT_INDEX_PATH`) as an entry.
fn entry_of_key(key: &JsValue) -> Option<ArtifactSnippet> {
    let parts: &Array = key.dyn_ref()?;
    let text = |i: u32| parts.get(i).as_string();
    let number = |i: u32| parts.get(i).as_f64();
    Some(ArtifactSnippet {
        session_id: text(0)?,
        active: number(1)? as u8,
        id: text(2)?,
        title: text(3)?,
        snippet: text(4)?,
        length: number(5)? as usize,
        created_at: number(6)?,
    })
}

fn create_index(store: &web_sys::IdbObjectStore, name: &str, path: &[&str]) -> std::result::Result<(), JsValue> {
    if store.index_names().contains(name) {
        return Ok(());
    }
    if let [single] = path {
        store.create_index_with_str(name, single)?;
    } else {
        let keys: Array = path.iter().map(|p| JsValue::from_str(p)).collect();
        store.create_index_with_str_sequence(name, &keys)?;
    }
    Ok(())
}

impl IdbBackend {
    /// Opens (creating or upgrading) the database `name` at the current schema version.
    pub async fn open(name: &str) -> Result<IdbBackend> {
        IdbBackend::open_at(name, schema::current_version()).await
    }

    /// Opens `name` at schema `version` (tests open older versions to check upgrades).
    pub async fn open_at(name: &str, version: u32) -> Result<IdbBackend> {
        let factory = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("indexedDB"))
            .ok()
            .and_then(|f| f.dyn_into::<web_sys::IdbFactory>().ok())
            .ok_or_else(|| StoreError::Backend("IndexedDB is not available in this browser context".into()))?;
        let request = factory.open_with_u32(name, version * IDB_VERSION_FACTOR).map_err(|e| store_error(&e))?;
        let upgrading = request.clone();
        let on_upgrade = Closure::<dyn FnMut(IdbVersionChangeEvent)>::new(move |event: IdbVersionChangeEvent| {
            let old = event.old_version() as u32;
            let new = event.new_version().map_or(version * IDB_VERSION_FACTOR, |v| v as u32);
            if let Err(e) = upgrade(&upgrading, old, new) {
                web_sys::console::error_2(&JsValue::from_str("atelier-agent: schema upgrade failed"), &e);
                if let Some(tx) = upgrading.transaction() {
                    let _ = tx.abort();
                }
            }
        });
        request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
        let opened = request_done(&request).await;
        request.set_onupgradeneeded(None);
        drop(on_upgrade);
        let db: IdbDatabase = opened.map_err(|e| store_error(&e))?.unchecked_into();
        // Another tab upgrading the schema: close so it is not blocked, and
        // say so on every later call.
        let closing = db.clone();
        let closed_for_upgrade = Rc::new(Cell::new(false));
        let flag = closed_for_upgrade.clone();
        let on_version_change = Closure::<dyn FnMut()>::new(move || {
            flag.set(true);
            closing.close();
        });
        db.set_onversionchange(Some(on_version_change.as_ref().unchecked_ref()));
        on_version_change.forget();
        let artifacts = ArtifactWriter::new(&db, ARTIFACTS, INDEX_STALE, SNIPPET_CHARS as u32, LAZY_INDEX_BATCH as u32);
        Ok(IdbBackend { db, closed_for_upgrade, fail_next: RefCell::new(None), artifacts })
    }

    /// Deletes the database `name` (tests and "forget everything").
    pub async fn delete(name: &str) -> Result<()> {
        let factory = web_sys::window()
            .and_then(|w| w.indexed_db().ok().flatten())
            .ok_or_else(|| StoreError::Backend("IndexedDB is not available".into()))?;
        let request = factory.delete_database(name).map_err(|e| store_error(&e))?;
        request_done(&request).await.map(|_| ()).map_err(|e| store_error(&e))
    }

    /// Closes the connection.
    pub fn close(&self) {
        self.db.close();
    }

    /// The object stores that exist (to check upgrades).
    pub fn store_names(&self) -> Vec<String> {
        let names = self.db.object_store_names();
        (0..names.length()).filter_map(|i| names.item(i)).collect()
    }

    #[doc(hidden)]
    /// Test hook: make the next batch fail with a DOMException of `name`
    /// after its first request (the transaction is aborted and rolled back).
    pub fn fail_next_write_with(&self, name: &str) {
        *self.fail_next.borrow_mut() = Some(name.to_owned());
    }

    fn transaction(&self, stores: &[&str], mode: IdbTransactionMode) -> Result<IdbTransaction> {
        if self.closed_for_upgrade.get() {
            return Err(StoreError::ReloadRequired);
        }
        let tx = match stores {
            [one] => self.db.transaction_with_str_and_mode(one, mode),
            _ => {
                let names: Array = stores.iter().map(|s| JsValue::from_str(s)).collect();
                self.db.transaction_with_str_sequence_and_mode(&names, mode)
            }
        };
        tx.map_err(|e| store_error(&e))
    }

    /// Puts JS objects in one transaction (the fast path for bulk imports and
    /// the benchmark). Artifacts get their index fields (on copies), or, in a
    /// batch of [`LAZY_INDEX_BATCH`] or more, are written as they are with
    /// their sessions marked stale in the same transaction.
    pub async fn put_js(&self, store: &str, records: &[JsValue]) -> Result<()> {
        let done = self.issue_put_js(store, &records.iter().collect::<Array>())?;
        JsFuture::from(done).await.map(|_| ()).map_err(|e| store_error(&e))
    }

    /// [`put_js`](Self::put_js) for JS callers, of `records` (an array of
    /// records, or one record): every request is issued now and the promise
    /// settles with the transaction (rejected with its DOMException when it
    /// aborts).
    pub fn issue_put_js(&self, store: &str, records: &JsValue) -> Result<Promise> {
        // Each path is one call into JS, which opens the transaction, issues
        // every put, commits, and aborts if a put is refused.
        let list = || match records.dyn_ref::<Array>() {
            Some(list) => list.clone(),
            None => Array::of1(records),
        };
        let issued = if store != ARTIFACTS {
            put_records(&self.db, store, &list())
        } else {
            // Usually every cut is plain (or the batch leaves its index to
            // the first read) and JS does it all.
            match self.artifacts.put(records) {
                Ok(Some(done)) => Ok(done),
                Ok(None) => {
                    let list = list();
                    let units: Vec<u32> = list.iter().map(|r| snippet_units_js(&r)).collect();
                    put_records_indexed(&self.db, ARTIFACTS, &list, &units)
                }
                Err(e) => Err(e),
            }
        };
        issued.map_err(|e| store_error(&e))
    }

    /// The records of `index` equal to `key`, as JS objects.
    pub async fn get_all_js(&self, store: &str, index: &str, key: &JsValue) -> Result<Array> {
        let tx = self.transaction(&[store], IdbTransactionMode::Readonly)?;
        let source = tx.object_store(store).and_then(|s| s.index(index)).map_err(|e| store_error(&e))?;
        let request = source.get_all_with_key(key).map_err(|e| store_error(&e))?;
        Ok(request_done(&request).await.map_err(|e| store_error(&e))?.unchecked_into())
    }

    /// One read of a session's active index entries: the `bySessionActive`
    /// keys (no record is loaded) and whether the session is marked stale.
    async fn read_index(&self, session_id: &str) -> Result<(Vec<ArtifactSnippet>, bool)> {
        let tx = self.transaction(&[ARTIFACTS, INDEX_STALE], IdbTransactionMode::Readonly)?;
        let session = JsValue::from_str(session_id);
        let lower: Array = [session.clone(), 1.into()].iter().collect();
        let upper: Array = [session.clone(), 1.into(), Array::new().into()].iter().collect();
        // Listen before awaiting anything: the request may succeed meanwhile.
        let stale =
            request_done(&tx.object_store(INDEX_STALE).and_then(|s| s.get(&session)).map_err(|e| store_error(&e))?);
        let index = tx.object_store(ARTIFACTS).and_then(|s| s.index("bySessionActive")).map_err(|e| store_error(&e))?;
        let keys = index_keys(&index, &lower, &upper).map_err(|e| store_error(&e))?;
        let keys: Array = JsFuture::from(keys).await.map_err(|e| store_error(&e))?.unchecked_into();
        let stale = !stale.await.map_err(|e| store_error(&e))?.is_undefined();
        Ok((keys.iter().filter_map(|k| entry_of_key(&k)).collect(), stale))
    }

    /// Adds the index fields to every artifact of a stale session and clears
    /// its mark, in one transaction.
    async fn reindex_session(&self, session_id: &str) -> Result<()> {
        let tx = self.transaction(&[ARTIFACTS, INDEX_STALE], IdbTransactionMode::Readwrite)?;
        let done = transaction_done(&tx);
        let issued = (|| -> std::result::Result<(), JsValue> {
            let store = tx.object_store(ARTIFACTS)?;
            let request = store.index("sessionId")?.get_all_with_key(&JsValue::from_str(session_id))?;
            index_on_success(&request, store, Some((tx.object_store(INDEX_STALE)?, session_id.to_owned())));
            Ok(())
        })();
        if let Err(e) = issued {
            let _ = tx.abort();
            let _ = done.await;
            return Err(store_error(&e));
        }
        done.await.map(|_| ()).map_err(|e| store_error(&e))
    }

    /// Counts a store's records.
    pub async fn count(&self, store: &str) -> Result<u32> {
        let tx = self.transaction(&[store], IdbTransactionMode::Readonly)?;
        let request = tx.object_store(store).and_then(|s| s.count()).map_err(|e| store_error(&e))?;
        Ok(request_done(&request).await.map_err(|e| store_error(&e))?.as_f64().unwrap_or(0.0) as u32)
    }
}

#[async_trait(?Send)]
impl Backend for IdbBackend {
    async fn get(&self, store: &str, key: &str) -> Result<Option<Value>> {
        let tx = self.transaction(&[store], IdbTransactionMode::Readonly)?;
        let request =
            tx.object_store(store).and_then(|s| s.get(&JsValue::from_str(key))).map_err(|e| store_error(&e))?;
        let value = request_done(&request).await.map_err(|e| store_error(&e))?;
        if value.is_undefined() {
            return Ok(None);
        }
        from_js(store, value).map(Some)
    }

    async fn by_index_key(&self, store: &str, index: &str, key: &Value) -> Result<Vec<Value>> {
        let all = self.get_all_js(store, index, &to_js(key)?).await?;
        all.iter().map(|v| from_js(store, v)).collect()
    }

    async fn all(&self, store: &str) -> Result<Vec<Value>> {
        let tx = self.transaction(&[store], IdbTransactionMode::Readonly)?;
        let request = tx.object_store(store).and_then(|s| s.get_all()).map_err(|e| store_error(&e))?;
        let all: Array = request_done(&request).await.map_err(|e| store_error(&e))?.unchecked_into();
        all.iter().map(|v| from_js(store, v)).collect()
    }

    /// Read from the `bySessionActive` index keys alone. A session a bulk
    /// write left stale is indexed first (once), then read again.
    async fn artifact_index(&self, session_id: &str, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
        // The index holds active artifacts only (what the agent injects); a
        // listing of every artifact reads the records.
        if active_only {
            for _ in 0..3 {
                let (entries, stale) = self.read_index(session_id).await?;
                if !stale {
                    return Ok(entries);
                }
                self.reindex_session(session_id).await?;
            }
        }
        // Every artifact, or bulk writes keep marking the session stale:
        // derive from the records.
        index_from_records(self.by_index(ARTIFACTS, "sessionId", session_id).await?, active_only)
    }

    async fn write(&self, writes: Vec<Write>) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let mut stores: Vec<&str> = writes
            .iter()
            .map(|w| match w {
                Write::Put { store, .. } | Write::Delete { store, .. } => *store,
            })
            .collect();
        // Artifacts carry their index fields, or, in a large batch, are
        // written without them and their sessions marked stale.
        let artifact_puts = writes.iter().filter(|w| matches!(w, Write::Put { store: ARTIFACTS, .. })).count();
        let lazy = artifact_puts >= LAZY_INDEX_BATCH;
        let mut stale_sessions = std::collections::BTreeSet::new();
        if lazy {
            stores.push(INDEX_STALE);
        }
        stores.sort_unstable();
        stores.dedup();
        // Convert everything first: a record that cannot be converted fails
        // the batch before anything is written.
        let mut requests = Vec::with_capacity(writes.len());
        for write in &writes {
            requests.push(match write {
                Write::Put { store: ARTIFACTS, value } => {
                    let fields = (!lazy).then(|| ArtifactSnippet::index_field(value));
                    let mut value = value.clone();
                    if let Some(record) = value.as_object_mut() {
                        match fields {
                            Some(fields) => {
                                record.insert(INDEX_FIELD.to_owned(), fields);
                            }
                            None => {
                                record.remove(INDEX_FIELD);
                                if let Some(session) = record.get("sessionId").and_then(Value::as_str) {
                                    stale_sessions.insert(session.to_owned());
                                }
                            }
                        }
                    }
                    (ARTIFACTS, true, to_js(&value)?)
                }
                Write::Put { store, value } => (*store, true, to_js(value)?),
                Write::Delete { store, key } => (*store, false, JsValue::from_str(key)),
            });
        }
        for session in stale_sessions {
            requests.push((INDEX_STALE, true, to_js(&serde_json::json!({ "sessionId": session }))?));
        }
        let tx = self.transaction(&stores, IdbTransactionMode::Readwrite)?;
        let done = transaction_done(&tx);
        let fail_with = self.fail_next.borrow_mut().take();
        for (i, (store, put, value)) in requests.iter().enumerate() {
            let issued = tx.object_store(store).and_then(|s| if *put { s.put(value) } else { s.delete(value) });
            let failure = match (&issued, &fail_with) {
                (Err(e), _) => Some(e.clone()),
                (Ok(_), Some(name)) if i == 0 => {
                    Some(web_sys::DomException::new_with_message_and_name("simulated failure", name)?.into())
                }
                _ => None,
            };
            if let Some(e) = failure {
                let _ = tx.abort();
                let _ = done.await;
                return Err(store_error(&e));
            }
        }
        commit(&tx);
        done.await.map(|_| ()).map_err(|e| store_error(&e))
    }
}

impl From<JsValue> for StoreError {
    fn from(e: JsValue) -> StoreError {
        store_error(&e)
    }
}
