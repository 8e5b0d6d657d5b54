//! `Db`: typed access to the person's data and the agent's artifacts over a
//! [`Backend`]. Every change made on the agent's behalf writes the previous
//! version as a [`Revision`] in the same atomic batch, so it can be undone
//! byte for byte (see `history.rs`).

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::backend::{Backend, Write};
use super::error::{Result, StoreError};
use super::history::Change;
use super::model::stores::*;
use super::model::*;
use crate::platform;

/// Who makes a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Agent,
    User,
}

impl Origin {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Origin::Agent => "agent",
            Origin::User => "user",
        }
    }
}

/// Typed access to the database.
#[derive(Clone)]
pub struct Db {
    pub(super) backend: Rc<dyn Backend>,
}

pub(super) fn to_value<T: Serialize>(store: &str, record: &T) -> Result<Value> {
    serde_json::to_value(record).map_err(|e| StoreError::Codec { store: store.to_owned(), detail: e.to_string() })
}

pub(super) fn from_value<T: DeserializeOwned>(store: &str, value: Value) -> Result<T> {
    crate::json::from_value(value).map_err(|e| StoreError::Codec { store: store.to_owned(), detail: e.to_string() })
}

thread_local! {
    static SEQUENCE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Revision (and transcript) ids sort in the order changes were made:
/// milliseconds, then a sequence number for changes within the same millisecond.
pub(super) fn revision_id() -> String {
    let seq = SEQUENCE.with(|s| {
        s.set(s.get() + 1);
        s.get()
    });
    format!("{:015}-{seq:09}", platform::now_ms().max(0.0) as u64)
}

pub(super) fn by_order<T>(items: &mut Vec<T>, order: impl Fn(&T) -> f64) {
    super::order::sort_by(items, |a, b| order(a).total_cmp(&order(b)));
}

impl Db {
    /// Typed access over `backend`; its search index starts loading in the
    /// background (where there is an event loop).
    pub fn new(backend: Rc<dyn Backend>) -> Db {
        if let Some(search) = backend.search_index() {
            search.attach(Rc::downgrade(&backend));
        }
        Db { backend }
    }

    /// Searches the person's chapters and plot, the artifacts, memories and
    /// transcripts (see [`crate::search`]): `query` must not be empty; an
    /// unknown scope name is refused. When some records still wait to be
    /// indexed, the answer says so (its `status`).
    pub async fn search(&self, query: &str, options: &crate::search::SearchOptions) -> Result<super::SearchAnswer> {
        match self.backend.search_index() {
            Some(search) => search.search(&*self.backend, query, options).await,
            None => Err(StoreError::Backend("this backend keeps no search index".into())),
        }
    }

    /// Where the search index stands.
    pub fn search_status(&self) -> Option<super::SearchStatus> {
        self.backend.search_index().map(|s| s.status())
    }

    /// Waits until every record is searchable and every segmentation stored.
    pub async fn search_settled(&self) -> Result<super::SearchStatus> {
        match self.backend.search_index() {
            Some(search) => search.settle(&*self.backend).await,
            None => Err(StoreError::Backend("this backend keeps no search index".into())),
        }
    }

    /// The backend (for checkpoints and other raw access).
    pub fn backend(&self) -> &Rc<dyn Backend> {
        &self.backend
    }

    pub(super) async fn get<T: DeserializeOwned>(&self, store: &str, id: &str) -> Result<Option<T>> {
        self.backend.get(store, id).await?.map(|v| from_value(store, v)).transpose()
    }

    pub(super) async fn require<T: DeserializeOwned>(&self, store: &str, id: &str) -> Result<T> {
        self.get(store, id).await?.ok_or_else(|| StoreError::NotFound { store: store.to_owned(), id: id.to_owned() })
    }

    pub(super) async fn list<T: DeserializeOwned>(&self, store: &str, index: &str, value: &str) -> Result<Vec<T>> {
        self.backend.by_index(store, index, value).await?.into_iter().map(|v| from_value(store, v)).collect()
    }

    /// Writes `new` (or deletes the record when `None`) with, when the agent
    /// or an undoable user change asks for it, the previous version as a
    /// revision: one atomic batch.
    pub(crate) async fn change(
        &self,
        store: &'static str,
        id: &str,
        new: Option<Value>,
        origin: Option<Origin>,
        reason: &str,
    ) -> Result<()> {
        self.change_all(vec![Change { store, id: id.to_owned(), new }], origin, reason, Vec::new()).await
    }

    // ---- settings ---------------------------------------------------------------

    pub async fn setting(&self, key: &str) -> Result<Option<Value>> {
        Ok(self.get::<Setting>(SETTINGS, key).await?.map(|s| s.value))
    }

    pub async fn set_setting(&self, key: &str, value: Value) -> Result<()> {
        let setting = Setting { key: key.to_owned(), value };
        self.backend.write(vec![Write::Put { store: SETTINGS, value: to_value(SETTINGS, &setting)? }]).await
    }
}
