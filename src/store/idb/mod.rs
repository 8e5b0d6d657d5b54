//! IndexedDB backend (browser only), on web-sys and a small JS module
//! (`idb.js`, JSDoc-typed and checked with `tsc --checkJs`): one transaction
//! per atomic batch, every request of a batch issued at once and the batch
//! awaited on the transaction's `complete` (rolled back on `abort`).
//!
//! By job: `mod.rs` the connection, reads and error mapping; `upgrade.rs`
//! the schema versions; `write.rs` the batch writer (the only write path:
//! the agent's typed writes, imports and the benchmark all go through
//! `Backend::write`); `index.rs` the artifact index read from index keys.
//!
//! Why not rexie (see docs/ARCHITECTURE.md, "Why the IndexedDB adapter is
//! hand-written"): a `Rexie` can only be made by its builder, whose upgrade
//! deletes every object store it was not told about (a Dexie app's tables
//! in the same database) and panics on a failed step; it runs no data
//! migrations, gives no handle on the connection's `versionchange`, reads
//! no index keys, and wraps DOMExceptions so that `QuotaExceededError`
//! cannot be told apart.

mod index;
mod upgrade;
mod write;

use std::cell::Cell;
use std::rc::Rc;

use async_trait::async_trait;
use js_sys::{Array, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbIndex, IdbRequest, IdbTransaction, IdbTransactionMode};

#[cfg(feature = "test-hooks")]
pub use write::testing;

use super::backend::{record, Backend, Guard, Write};
use super::error::{Result, StoreError};
use super::model::stores::{PLOTS, PROJECTS, SECTIONS};
use super::model::ArtifactSnippet;
use super::schema;
use super::search::SearchIndex;

#[wasm_bindgen(module = "/src/store/idb/idb.js")]
extern "C" {
    #[wasm_bindgen(js_name = requestPromise)]
    fn request_promise(request: &IdbRequest) -> Promise;
    #[wasm_bindgen(js_name = transactionPromise)]
    fn transaction_promise(tx: &IdbTransaction) -> Promise;
    #[wasm_bindgen(js_name = indexKeys)]
    fn index_keys(index: &IdbIndex, lower: &JsValue, upper: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = markSessionsStale)]
    fn mark_sessions_stale(tx: &IdbTransaction, store: &str, stale: &str);
    #[wasm_bindgen(js_name = openDatabase)]
    fn open_database(name: &str, version: u32, upgrade: &js_sys::Function, blocked_ms: u32) -> Promise;
    #[wasm_bindgen(js_name = closeForUpgrades)]
    fn close_for_upgrades(db: &IdbDatabase, on_closed: &js_sys::Function);
    #[wasm_bindgen(js_name = deleteDatabase)]
    fn delete_database(name: &str) -> Promise;
    #[wasm_bindgen(js_name = openChannel)]
    fn open_channel(name: &str) -> JsValue;
    #[wasm_bindgen(js_name = announce)]
    fn announce(channel: &JsValue, stores: Vec<String>, keys: Vec<String>);
    #[wasm_bindgen(js_name = listenForKeys)]
    fn listen_for_keys(channel: &JsValue, listener: &js_sys::Function) -> js_sys::Function;
    #[wasm_bindgen(js_name = pageAfter, catch)]
    fn page_after(
        store: &web_sys::IdbObjectStore,
        after: Option<String>,
        count: u32,
    ) -> std::result::Result<IdbRequest, JsValue>;
    #[wasm_bindgen(js_name = listen)]
    fn listen(channel: &JsValue, listener: &js_sys::Function) -> js_sys::Function;
    #[wasm_bindgen(js_name = strictTransaction, catch)]
    fn strict_transaction(db: &IdbDatabase, stores: Vec<String>) -> std::result::Result<IdbTransaction, JsValue>;
}

/// The IndexedDB database of atelier-agent.
pub struct IdbBackend {
    db: IdbDatabase,
    /// Set when another tab's upgrade made this connection close: every
    /// later call is `reload_required` instead of a DOMException.
    closed_for_upgrade: Rc<Cell<bool>>,
    /// The BroadcastChannel the tabs of this database share (or null).
    channel: JsValue,
    /// The search index this connection keeps current.
    search: Rc<SearchIndex>,
}

/// Maps a DOMException (or any JS error) to a typed storage error.
pub(crate) fn store_error(e: &JsValue) -> StoreError {
    let (name, message) = if let Some(ex) = e.dyn_ref::<web_sys::DomException>() {
        (ex.name(), ex.message())
    } else if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        (String::from(err.name()), String::from(err.message()))
    } else {
        (String::new(), e.as_string().unwrap_or_else(|| "unknown storage failure".into()))
    };
    match name.as_str() {
        "QuotaExceededError" => StoreError::QuotaExceeded(message),
        "BlockedError" => StoreError::Blocked,
        "DataCloneError" | "DataError" => StoreError::Codec { store: String::new(), detail: message },
        _ if name.is_empty() => StoreError::Backend(message),
        _ => StoreError::Backend(format!("{name}: {message}")),
    }
}

impl From<JsValue> for StoreError {
    fn from(e: JsValue) -> StoreError {
        store_error(&e)
    }
}

/// Awaits a JS promise, its rejection mapped to a storage error.
async fn settle(promise: Promise) -> Result<JsValue> {
    JsFuture::from(promise).await.map_err(|e| store_error(&e))
}

/// JSON values (a record, a key, or an array of them) as JS values (one
/// `JSON.parse`: faster than building the object field by field from WASM).
/// Only `Value`s cross here: a typed record is made a `Value` by the store
/// first, so no type has a text encoder of its own in the package.
fn to_js(value: &impl JsonValues) -> Result<JsValue> {
    let text = serde_json::to_string(value).map_err(|e| codec("", e))?;
    js_sys::JSON::parse(&text).map_err(|e| store_error(&e))
}

/// `Value` or `Vec<Value>`.
trait JsonValues: serde::Serialize {}
impl JsonValues for Value {}
impl JsonValues for Vec<Value> {}

/// A JS value (a record, or an array of them) as JSON.
fn from_js(store: &str, value: &JsValue) -> Result<Value> {
    let text: String = js_sys::JSON::stringify(value).map_err(|e| store_error(&e))?.into();
    serde_json::from_str(&text).map_err(|e| codec(store, e))
}

/// A JS array's items as JSON.
fn items_from_js(store: &str, value: &JsValue) -> Result<Vec<Value>> {
    crate::json::items(from_js(store, value)?).map_err(|e| codec(store, e))
}

fn codec(store: &str, e: serde_json::Error) -> StoreError {
    StoreError::Codec { store: store.to_owned(), detail: e.to_string() }
}

impl IdbBackend {
    /// Opens (creating or upgrading) the database `name` at the current schema version.
    pub async fn open(name: &str) -> Result<IdbBackend> {
        IdbBackend::open_at(name, schema::current_version()).await
    }

    /// Opens `name` at schema `version` (tests open older versions to check upgrades).
    pub async fn open_at(name: &str, version: u32) -> Result<IdbBackend> {
        let db: IdbDatabase = upgrade::open(name, version).await?;
        // Another tab upgrading the schema: close so it is not blocked, and
        // say so on every later call.
        let closed_for_upgrade = Rc::new(Cell::new(false));
        let flag = closed_for_upgrade.clone();
        let on_closed = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || flag.set(true));
        close_for_upgrades(&db, on_closed.as_ref().unchecked_ref());
        on_closed.forget();
        let channel = open_channel(name);
        // Another tab's writes to searched records: this tab's index reads them again.
        let search = Rc::new(SearchIndex::new());
        let weak = Rc::downgrade(&search);
        let on_keys = wasm_bindgen::closure::Closure::<dyn FnMut(Vec<String>)>::new(move |keys: Vec<String>| {
            if let Some(search) = weak.upgrade() {
                search.changed_elsewhere(keys);
            }
        });
        listen_for_keys(&channel, on_keys.as_ref().unchecked_ref());
        on_keys.forget();
        Ok(IdbBackend { db, closed_for_upgrade, channel, search })
    }

    /// Deletes the database `name` (tests and "forget everything").
    pub async fn delete(name: &str) -> Result<()> {
        settle(delete_database(name)).await.map(|_| ())
    }

    /// Calls `listener` with `{stores}` whenever another tab commits a write
    /// to this database; returns the function that stops it.
    pub fn on_change(&self, listener: &js_sys::Function) -> js_sys::Function {
        listen(&self.channel, listener)
    }

    /// Tells the other tabs a write to `stores` (and to the searched records `keys`) committed.
    fn announce(&self, stores: &[&str], keys: Vec<String>) {
        if !self.channel.is_null() {
            announce(&self.channel, stores.iter().map(|s| (*s).to_owned()).collect(), keys);
        }
    }

    /// The database's name.
    pub fn name(&self) -> String {
        self.db.name()
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

    fn transaction(&self, stores: &[&str], mode: IdbTransactionMode) -> Result<IdbTransaction> {
        if self.closed_for_upgrade.get() {
            return Err(StoreError::ReloadRequired);
        }
        // The person's work (manuscripts, plots, projects) is on disk when a
        // write reports success; everything else keeps the faster default.
        if mode == IdbTransactionMode::Readwrite && stores.iter().any(|s| [SECTIONS, PLOTS, PROJECTS].contains(s)) {
            let names = stores.iter().map(|s| (*s).to_owned()).collect();
            return strict_transaction(&self.db, names).map_err(|e| store_error(&e));
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

    /// One read request on `store` in a transaction of its own.
    async fn read(
        &self,
        store: &str,
        request: impl FnOnce(web_sys::IdbObjectStore) -> std::result::Result<IdbRequest, JsValue>,
    ) -> Result<JsValue> {
        let tx = self.transaction(&[store], IdbTransactionMode::Readonly)?;
        let request = tx.object_store(store).and_then(request).map_err(|e| store_error(&e))?;
        settle(request_promise(&request)).await
    }

    /// Counts a store's records.
    pub async fn count(&self, store: &str) -> Result<u32> {
        Ok(self.read(store, |s| s.count()).await?.as_f64().unwrap_or(0.0) as u32)
    }
}

#[async_trait(?Send)]
impl Backend for IdbBackend {
    async fn get(&self, store: &str, key: &str) -> Result<Option<Value>> {
        let value = self.read(store, |s| s.get(&JsValue::from_str(key))).await?;
        if value.is_undefined() {
            return Ok(None);
        }
        Ok(Some(record(store, from_js(store, &value)?)))
    }

    async fn by_index_key(&self, store: &str, index: &str, key: &Value) -> Result<Vec<Value>> {
        let key = to_js(key)?;
        let all = self.read(store, |s| s.index(index)?.get_all_with_key(&key)).await?;
        Ok(items_from_js(store, &all)?.into_iter().map(|v| record(store, v)).collect())
    }

    async fn keys_by_index(&self, store: &str, index: &str, value: &str) -> Result<Vec<String>> {
        let keys = self.read(store, |s| s.index(index)?.get_all_keys_with_key(&JsValue::from_str(value))).await?;
        crate::json::from_value(from_js(store, &keys)?).map_err(|e| codec(store, e))
    }

    async fn all_keys(&self, store: &str) -> Result<Vec<String>> {
        let keys = self.read(store, |s| s.get_all_keys()).await?;
        // Keys another app wrote may be numbers: those are no id of ours.
        let keys = items_from_js(store, &keys)?;
        Ok(keys.into_iter().filter_map(|k| k.as_str().map(str::to_owned)).collect())
    }

    async fn all(&self, store: &str) -> Result<Vec<Value>> {
        let all = self.read(store, |s| s.get_all()).await?;
        Ok(items_from_js(store, &all)?.into_iter().map(|v| record(store, v)).collect())
    }

    async fn page(&self, store: &str, after: Option<&str>, count: usize) -> Result<Vec<Value>> {
        let all = self.read(store, |s| page_after(&s, after.map(str::to_owned), count as u32)).await?;
        Ok(items_from_js(store, &all)?.into_iter().map(|v| record(store, v)).collect())
    }

    fn search_index(&self) -> Option<&Rc<SearchIndex>> {
        Some(&self.search)
    }

    async fn artifact_index(&self, session_id: &str, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
        index::artifact_index(self, session_id, active_only).await
    }

    async fn write(&self, writes: Vec<Write>) -> Result<()> {
        write::write(self, None, writes).await
    }

    async fn write_guarded(&self, guard: Guard<'_>, writes: Vec<Write>) -> Result<()> {
        write::write(self, Some(guard), writes).await
    }

    async fn write_new(&self, writes: Vec<Write>) -> Result<bool> {
        match write::write_as(self, None, writes, true).await {
            Ok(()) => Ok(true),
            // `store_error` names the DOMException first.
            Err(StoreError::Backend(e)) if e.starts_with("ConstraintError") => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Issues a read of each (store, key) of `reads` in `tx`; the future gets
/// the records in that order. Awaiting it keeps `tx` active: the requests'
/// promises settle in the success event's microtasks, where more requests
/// may be issued.
fn get_all_of(
    tx: &IdbTransaction,
    reads: &[(&'static str, String)],
) -> Result<impl std::future::Future<Output = Result<Vec<Option<Value>>>>> {
    let requests = Array::new();
    for (store, key) in reads {
        let request =
            tx.object_store(store).and_then(|s| s.get(&JsValue::from_str(key))).map_err(|e| store_error(&e))?;
        requests.push(&request_promise(&request));
    }
    let stores: Vec<&'static str> = reads.iter().map(|(store, _)| *store).collect();
    Ok(async move {
        // A missing record is `undefined`, which JSON writes as null.
        let found = settle(Promise::all(&requests)).await?;
        let found = items_from_js("a guarded read", &found)?;
        Ok(found.into_iter().zip(stores).map(|(v, store)| (!v.is_null()).then(|| record(store, v))).collect())
    })
}
