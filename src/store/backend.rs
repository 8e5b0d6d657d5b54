//! The storage backend: JSON records in named object stores, looked up by
//! primary key or by an indexed field, with atomic multi-store writes.
//! Implementations: [`MemoryBackend`] (native tests) and the IndexedDB one
//! in the browser.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use serde_json::Value;

use super::error::{Result, StoreError};
use super::model::stores::ARTIFACTS;
use super::model::{ArtifactSnippet, SessionArtifact};
use super::schema;

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

/// Records in memory, with an optional byte quota to exercise full-disk paths.
#[derive(Default)]
pub struct MemoryBackend {
    stores: RefCell<HashMap<String, BTreeMap<String, Value>>>,
    quota_bytes: std::cell::Cell<Option<usize>>,
}

impl MemoryBackend {
    pub fn new() -> MemoryBackend {
        MemoryBackend::default()
    }

    /// A backend that refuses writes once the stored JSON exceeds `bytes`.
    pub fn with_quota(bytes: usize) -> MemoryBackend {
        MemoryBackend { quota_bytes: std::cell::Cell::new(Some(bytes)), ..MemoryBackend::default() }
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

    fn size(stores: &HashMap<String, BTreeMap<String, Value>>) -> usize {
        stores.values().flat_map(|s| s.values()).map(|v| v.to_string().len()).sum()
    }
}

#[async_trait(?Send)]
impl Backend for MemoryBackend {
    async fn get(&self, store: &str, key: &str) -> Result<Option<Value>> {
        Ok(self.stores.borrow().get(store).and_then(|s| s.get(key).cloned()))
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
            .map(|s| s.values().filter(|v| matches(v)).cloned().collect())
            .unwrap_or_default())
    }

    async fn all(&self, store: &str) -> Result<Vec<Value>> {
        Ok(self.stores.borrow().get(store).map(|s| s.values().cloned().collect()).unwrap_or_default())
    }

    async fn write(&self, writes: Vec<Write>) -> Result<()> {
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
        Ok(())
    }
}
