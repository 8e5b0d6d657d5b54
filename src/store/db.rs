//! `Db`: typed access to the person's data and the agent's artifacts over a
//! [`Backend`]. Every change made on the agent's behalf writes the previous
//! version as a [`Revision`] in the same atomic batch, so it can be undone
//! byte for byte.

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::backend::{Backend, Write};
use super::error::{Result, StoreError};
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
    fn as_str(self) -> &'static str {
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
    serde_json::from_value(value).map_err(|e| StoreError::Codec { store: store.to_owned(), detail: e.to_string() })
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
    pub fn new(backend: Rc<dyn Backend>) -> Db {
        Db { backend }
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
        self.change_with(store, id, new, origin, reason, Vec::new()).await
    }

    /// [`Db::change`] with more writes in the same atomic batch (a tool
    /// call's receipt).
    pub(crate) async fn change_with(
        &self,
        store: &'static str,
        id: &str,
        new: Option<Value>,
        origin: Option<Origin>,
        reason: &str,
        also: Vec<Write>,
    ) -> Result<()> {
        let mut writes = Vec::with_capacity(2 + also.len());
        if let Some(origin) = origin {
            let before = self.backend.get(store, id).await?;
            let revision = Revision {
                id: revision_id(),
                store: store.to_owned(),
                record_id: id.to_owned(),
                before,
                origin: origin.as_str().to_owned(),
                reason: reason.to_owned(),
                created_at: platform::now_ms(),
            };
            writes.push(Write::Put { store: REVISIONS, value: to_value(REVISIONS, &revision)? });
        }
        writes.push(match new {
            Some(value) => Write::Put { store, value },
            None => Write::Delete { store, key: id.to_owned() },
        });
        writes.extend(also);
        self.backend.write(writes).await
    }

    // ---- revisions and undo -----------------------------------------------

    /// Revisions made by `origin`, newest first.
    pub async fn revisions(&self, origin: Origin) -> Result<Vec<Revision>> {
        let mut list: Vec<Revision> = self.list(REVISIONS, "origin", origin.as_str()).await?;
        super::order::sort_by(&mut list, |a, b| b.id.cmp(&a.id));
        Ok(list)
    }

    /// Undoes the newest change made by `origin`: the record returns to its
    /// previous version exactly (or disappears if the change created it), in
    /// one batch with the revision's removal. `None` when there is nothing to undo.
    pub async fn undo_last(&self, origin: Origin) -> Result<Option<Revision>> {
        let Some(revision) = self.revisions(origin).await?.into_iter().next() else {
            return Ok(None);
        };
        let store =
            [ARTIFACTS, SECTIONS, PLOTS, PROJECTS].into_iter().find(|s| *s == revision.store).ok_or_else(|| {
                StoreError::Codec { store: revision.store.clone(), detail: "unknown store in a revision".into() }
            })?;
        let writes = vec![
            match &revision.before {
                Some(before) => Write::Put { store, value: before.clone() },
                None => Write::Delete { store, key: revision.record_id.clone() },
            },
            Write::Delete { store: REVISIONS, key: revision.id.clone() },
        ];
        self.backend.write(writes).await?;
        Ok(Some(revision))
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
