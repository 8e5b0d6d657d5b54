//! The storage backend: JSON records in named object stores, looked up by
//! primary key or by an indexed field, with atomic multi-store writes.
//! Implementations: [`MemoryBackend`] (native tests) and the IndexedDB one
//! in the browser.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use async_trait::async_trait;
use serde_json::Value;

use super::error::{Result, StoreError};
use super::model::stores::{ARTIFACTS, INDEX_STALE};
use super::model::{ArtifactSnippet, Lifecycle, SessionArtifact, INDEX_FIELD};
use super::schema;
use super::search::{self, SearchIndex};

/// One write of an atomic batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Insert or replace a record (its key is read from the schema's key path).
    Put { store: &'static str, value: Value },
    /// Remove a record by key.
    Delete { store: &'static str, key: String },
}

/// The condition a batch is written under: the records `reads` names
/// (store, key), as they are when the batch starts, must pass `check`, or
/// nothing is written and its error is the batch's.
pub struct Guard<'a> {
    pub reads: Vec<(&'static str, String)>,
    /// Gets the records in the order of `reads` (`None` where there is none).
    pub check: Box<dyn FnOnce(Vec<Option<Value>>) -> Result<()> + 'a>,
}

/// Where records live.
#[async_trait(?Send)]
pub trait Backend {
    /// One record by primary key.
    async fn get(&self, store: &str, key: &str) -> Result<Option<Value>>;
    /// The records whose index `index` has the key `key` (a string, a
    /// number, or an array for a compound index), by primary key.
    async fn by_index_key(&self, store: &str, index: &str, key: &Value) -> Result<Vec<Value>>;

    /// The records whose single-field index `index` equals `value`.
    async fn by_index(&self, store: &str, index: &str, value: &str) -> Result<Vec<Value>> {
        self.by_index_key(store, index, &Value::String(value.to_owned())).await
    }
    /// The primary keys of the records whose single-field index `index`
    /// equals `value`, in key order. IndexedDB reads them from the index
    /// without loading any record.
    async fn keys_by_index(&self, store: &str, index: &str, value: &str) -> Result<Vec<String>> {
        self.by_index(store, index, value).await?.iter().map(|v| key_of(store, v)).collect()
    }
    /// Every record of a store, by primary key.
    async fn all(&self, store: &str) -> Result<Vec<Value>>;
    /// Up to `count` records of a store whose keys come after `after` (from
    /// the first when `None`), in key order: a store read a page at a time.
    async fn page(&self, store: &str, after: Option<&str>, count: usize) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        for value in self.all(store).await? {
            if after.is_none_or(|a| key_of(store, &value).is_ok_and(|k| k.as_str() > a)) {
                out.push(value);
                if out.len() == count {
                    break;
                }
            }
        }
        Ok(out)
    }
    /// The records of `store` with these keys (`None` where there is none)
    /// (one read each: other tabs' changes, a rare and small read, are not
    /// worth a batched reader of their own in the package).
    async fn get_many(&self, store: &'static str, keys: &[String]) -> Result<Vec<Option<Value>>> {
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            out.push(self.get(store, key).await?);
        }
        Ok(out)
    }
    /// Every primary key of a store, in key order (IndexedDB loads no record).
    async fn all_keys(&self, store: &str) -> Result<Vec<String>> {
        self.all(store).await?.iter().map(|v| key_of(store, v)).collect()
    }
    /// Applies every write or none.
    async fn write(&self, writes: Vec<Write>) -> Result<()>;
    /// Applies every write or none, if the guard's records pass its check.
    /// IndexedDB reads them in the batch's own transaction, so no other
    /// tab's write can come between the check and the batch.
    async fn write_guarded(&self, guard: Guard<'_>, writes: Vec<Write>) -> Result<()> {
        let mut found = Vec::with_capacity(guard.reads.len());
        for (store, key) in &guard.reads {
            found.push(self.get(store, key).await?);
        }
        (guard.check)(found)?;
        self.write(writes).await
    }

    /// Applies every write or none, if no put's key is stored yet: `false`
    /// (and nothing written) when one is. One round trip where a guard
    /// reading the keys first would take two (IndexedDB: `add`, whose
    /// failure aborts the batch). This default says `false`: callers then
    /// take their guarded path.
    async fn write_new(&self, writes: Vec<Write>) -> Result<bool> {
        let _ = writes;
        Ok(false)
    }

    /// The search index this backend keeps current (see `store::search`).
    fn search_index(&self) -> Option<&Rc<SearchIndex>> {
        None
    }

    /// The index entries of a session's artifacts (only the active ones when
    /// `active_only`), in id order. This default derives them from the full
    /// records; IndexedDB reads them from an index without loading any record.
    async fn artifact_index(&self, session_id: &str, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
        index_from_records(self.by_index(ARTIFACTS, "sessionId", session_id).await?, active_only)
    }
}

/// The index entries of artifact records (only the active ones when
/// `active_only`), in id order.
pub(crate) fn index_from_records(records: Vec<Value>, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
    let mut entries = Vec::new();
    for value in records {
        let artifact: SessionArtifact = crate::json::from_value(value)
            .map_err(|e| StoreError::Codec { store: ARTIFACTS.to_owned(), detail: e.to_string() })?;
        if artifact.is_active || !active_only {
            entries.push(ArtifactSnippet::of(&artifact));
        }
    }
    super::order::sort_by(&mut entries, |a, b| a.id.cmp(&b.id));
    Ok(entries)
}

/// The key of `value` in `store`, read from the schema's key path.
pub fn key_of(store: &str, value: &Value) -> Result<String> {
    let field = schema::key_path(store);
    value.get(field).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| StoreError::Codec {
        store: store.to_owned(),
        detail: format!("the record has no string `{field}`"),
    })
}

/// Batches with at least this many artifact puts write the records without
/// their index fields and mark the sessions stale instead: the session's
/// first index read adds them. A bulk import then costs what the raw records
/// cost, and an agent's single writes keep the index current as they go.
pub const LAZY_INDEX_BATCH: usize = 256;

/// The one rule for artifact index fields, on every backend: each artifact
/// put gets its [`INDEX_FIELD`] (see `ArtifactSnippet::index_field`), or, in
/// a batch of [`LAZY_INDEX_BATCH`] or more, loses it, and its session is
/// marked stale in [`INDEX_STALE`] by the same batch.
pub(crate) fn add_index_fields(writes: &mut Vec<Write>) {
    let lazy = writes.iter().filter(|w| matches!(w, Write::Put { store: ARTIFACTS, .. })).count() >= LAZY_INDEX_BATCH;
    let mut stale: Vec<String> = Vec::new();
    for write in writes.iter_mut() {
        let Write::Put { store: ARTIFACTS, value } = write else { continue };
        if !value.is_object() {
            continue;
        }
        if lazy {
            if let Some(session) = value.get("sessionId").and_then(Value::as_str) {
                if !stale.iter().any(|s| s == session) {
                    stale.push(session.to_owned());
                }
            }
            value.as_object_mut().map(|r| r.remove(INDEX_FIELD));
        } else {
            value[INDEX_FIELD] = ArtifactSnippet::index_field(value);
        }
    }
    writes.extend(
        stale
            .into_iter()
            .map(|session| Write::Put { store: INDEX_STALE, value: serde_json::json!({ "sessionId": session }) }),
    );
}

/// A stored record as the rest of the code sees it (artifacts without their
/// storage-only index field).
pub(crate) fn record(store: &str, mut value: Value) -> Value {
    if store == ARTIFACTS {
        if let Some(fields) = value.as_object_mut() {
            fields.remove(INDEX_FIELD);
        }
    }
    value
}

/// The index entry a stored artifact record's fields make, if it has one
/// (the fields of the IndexedDB `bySessionActive` key: active artifacts only).
fn stored_entry(value: &Value) -> Option<ArtifactSnippet> {
    let index = value.get(INDEX_FIELD)?;
    let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).map(str::to_owned);
    Some(ArtifactSnippet {
        id: text(value, "id")?,
        session_id: text(value, "sessionId")?,
        active: index.get("active")?.as_f64()? as u8,
        title: text(value, "title")?,
        snippet: text(index, "snippet")?,
        length: index.get("length")?.as_f64()? as usize,
        created_at: value.get("createdAt")?.as_f64()?,
        lifecycle: Lifecycle::from_name(index.get("lifecycle").and_then(Value::as_str).unwrap_or("")),
    })
}

type Stores = HashMap<String, BTreeMap<String, Value>>;

/// Records in memory, stored as IndexedDB stores them (artifact index
/// fields, the bulk rule, stale sessions), with an optional byte quota and
/// a one-shot failure to exercise full-disk paths. [`MemoryBackend::other_tab`]
/// opens a second connection to the same records, told of this one's writes
/// as another tab is.
#[derive(Default)]
pub struct MemoryBackend {
    stores: Rc<RefCell<Stores>>,
    quota_bytes: std::cell::Cell<Option<usize>>,
    fail_next: RefCell<Option<StoreError>>,
    search: Rc<SearchIndex>,
    /// The search indexes of every connection to these records.
    tabs: Rc<RefCell<Vec<std::rc::Weak<SearchIndex>>>>,
}

impl MemoryBackend {
    pub fn new() -> MemoryBackend {
        let backend = MemoryBackend::default();
        backend.tabs.borrow_mut().push(Rc::downgrade(&backend.search));
        backend
    }

    /// A backend that refuses writes once the stored JSON exceeds `bytes`.
    pub fn with_quota(bytes: usize) -> MemoryBackend {
        let backend = MemoryBackend::new();
        backend.quota_bytes.set(Some(bytes));
        backend
    }

    /// Another connection to the same records (another tab): each is told
    /// of the other's committed writes to searched records.
    pub fn other_tab(&self) -> MemoryBackend {
        let other = MemoryBackend { stores: self.stores.clone(), tabs: self.tabs.clone(), ..MemoryBackend::default() };
        self.tabs.borrow_mut().push(Rc::downgrade(&other.search));
        other
    }

    /// The same records as a new page load finds them (a new connection
    /// with nothing in memory).
    pub fn reopen(&self) -> MemoryBackend {
        let copy = MemoryBackend::new();
        *copy.stores.borrow_mut() = self.stores.borrow().clone();
        copy
    }

    /// Makes the next batch fail with `error` (nothing of it is written).
    pub fn fail_next_write(&self, error: StoreError) {
        *self.fail_next.borrow_mut() = Some(error);
    }

    /// Changes the quota (`None`: unlimited), as a person freeing space would.
    pub fn set_quota(&self, bytes: Option<usize>) {
        self.quota_bytes.set(bytes);
    }

    /// Bytes of stored JSON per store (what a storage measurement counts).
    pub fn bytes_by_store(&self) -> BTreeMap<String, usize> {
        self.stores
            .borrow()
            .iter()
            .map(|(name, records)| (name.clone(), records.values().map(|v| v.to_string().len()).sum()))
            .collect()
    }

    fn size(stores: &Stores) -> usize {
        stores.values().flat_map(|s| s.values()).map(|v| v.to_string().len()).sum()
    }

    /// Adds the index fields to a stale session's artifacts and clears its mark.
    fn reindex_session(&self, session_id: &str) {
        let mut stores = self.stores.borrow_mut();
        if let Some(artifacts) = stores.get_mut(ARTIFACTS) {
            for value in artifacts.values_mut() {
                if value.get("sessionId").and_then(Value::as_str) == Some(session_id) && value.is_object() {
                    value[INDEX_FIELD] = ArtifactSnippet::index_field(value);
                }
            }
        }
        if let Some(stale) = stores.get_mut(INDEX_STALE) {
            stale.remove(session_id);
        }
    }
}

#[async_trait(?Send)]
impl Backend for MemoryBackend {
    async fn get(&self, store: &str, key: &str) -> Result<Option<Value>> {
        Ok(self.stores.borrow().get(store).and_then(|s| s.get(key).cloned()).map(|v| record(store, v)))
    }

    async fn by_index_key(&self, store: &str, index: &str, key: &Value) -> Result<Vec<Value>> {
        let fields: Vec<&str> = schema::index_path(store, index).map(|p| p.to_vec()).unwrap_or_else(|| vec![index]);
        let wanted: Vec<&Value> = match key {
            Value::Array(parts) => parts.iter().collect(),
            single => vec![single],
        };
        let matches = |record: &Value| {
            fields.len() == wanted.len()
                && fields.iter().zip(&wanted).all(|(f, w)| match (record.get(*f), w) {
                    (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
                    (Some(a), b) => a == *b,
                    (None, _) => false,
                })
        };
        Ok(self
            .stores
            .borrow()
            .get(store)
            .map(|s| s.values().filter(|v| matches(v)).map(|v| record(store, v.clone())).collect())
            .unwrap_or_default())
    }

    async fn all(&self, store: &str) -> Result<Vec<Value>> {
        Ok(self
            .stores
            .borrow()
            .get(store)
            .map(|s| s.values().map(|v| record(store, v.clone())).collect())
            .unwrap_or_default())
    }

    async fn page(&self, store: &str, after: Option<&str>, count: usize) -> Result<Vec<Value>> {
        let stores = self.stores.borrow();
        let Some(records) = stores.get(store) else { return Ok(Vec::new()) };
        let from = match after {
            Some(after) => std::ops::Bound::Excluded(after.to_owned()),
            None => std::ops::Bound::Unbounded,
        };
        Ok(records
            .range((from, std::ops::Bound::Unbounded))
            .take(count)
            .map(|(_, v)| record(store, v.clone()))
            .collect())
    }

    /// Reads, checks and writes with no await in between: as atomic as
    /// IndexedDB's one transaction (the default reads first, then writes).
    async fn write_guarded(&self, guard: Guard<'_>, writes: Vec<Write>) -> Result<()> {
        let found = {
            let stores = self.stores.borrow();
            guard
                .reads
                .iter()
                .map(|(store, key)| stores.get(*store).and_then(|s| s.get(key).cloned()).map(|v| record(store, v)))
                .collect()
        };
        (guard.check)(found)?;
        self.write(writes).await
    }

    fn search_index(&self) -> Option<&Rc<SearchIndex>> {
        Some(&self.search)
    }

    async fn write_new(&self, writes: Vec<Write>) -> Result<bool> {
        let exists = {
            let stores = self.stores.borrow();
            writes.iter().any(|w| match w {
                Write::Put { store, value } => {
                    key_of(store, value).is_ok_and(|k| stores.get(*store).is_some_and(|s| s.contains_key(&k)))
                }
                Write::Delete { .. } => false,
            })
        };
        if exists {
            return Ok(false);
        }
        self.write(writes).await.map(|()| true)
    }

    async fn artifact_index(&self, session_id: &str, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
        if !active_only {
            return index_from_records(self.by_index(ARTIFACTS, "sessionId", session_id).await?, false);
        }
        let stale = self.stores.borrow().get(INDEX_STALE).is_some_and(|s| s.contains_key(session_id));
        if stale {
            self.reindex_session(session_id);
        }
        let stores = self.stores.borrow();
        let mut entries: Vec<ArtifactSnippet> = stores
            .get(ARTIFACTS)
            .into_iter()
            .flat_map(|s| s.values())
            .filter(|v| v.get("sessionId").and_then(Value::as_str) == Some(session_id))
            .filter_map(stored_entry)
            .filter(|e| e.active == 1)
            .collect();
        super::order::sort_by(&mut entries, |a, b| a.id.cmp(&b.id));
        Ok(entries)
    }

    async fn write(&self, mut writes: Vec<Write>) -> Result<()> {
        if let Some(error) = self.fail_next.borrow_mut().take() {
            return Err(error);
        }
        let (changes, also) = search::plan(&writes);
        writes.extend(also);
        add_index_fields(&mut writes);
        // Apply to a copy and swap it in: all or nothing.
        let mut next = self.stores.borrow().clone();
        for write in writes {
            match write {
                Write::Put { store, value } => {
                    let key = key_of(store, &value)?;
                    next.entry(store.to_owned()).or_default().insert(key, value);
                }
                Write::Delete { store, key } => {
                    if let Some(s) = next.get_mut(store) {
                        s.remove(&key);
                    }
                }
            }
        }
        if let Some(quota) = self.quota_bytes.get() {
            if Self::size(&next) > quota {
                return Err(StoreError::QuotaExceeded(format!("more than {quota} bytes")));
            }
        }
        *self.stores.borrow_mut() = next;
        let keys = search::changed_keys(&changes);
        self.search.apply(changes);
        // The other connections hear of it as another tab's write.
        for tab in self.tabs.borrow().iter().filter_map(std::rc::Weak::upgrade) {
            if !Rc::ptr_eq(&tab, &self.search) {
                tab.changed_elsewhere(keys.clone());
            }
        }
        Ok(())
    }
}
