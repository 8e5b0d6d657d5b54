//! History: every change made on the agent's behalf (and every undoable
//! edit of the person's) keeps the record's previous version as a
//! [`Revision`], written in the same atomic batch as the change.
//!
//! - **Undo never clobbers the person.** A revision carries a fingerprint of
//!   what its change wrote; [`Db::undo_last`] restores the previous version
//!   only while the record is still exactly that, and fails with `conflict`
//!   (changing nothing) once anyone wrote the record since.
//! - **One action, one undo.** The revisions of one batch (a chapter deleted
//!   with its sections) share a group, and undo restores the group whole.
//! - **History per record.** [`Db::revisions_of`] lists a record's
//!   revisions through the `recordId` index; [`Db::restore_revision`] puts a
//!   past version back as a new change, so a restore can be undone too.
//! - **Bounded.** A record keeps its newest [`KEEP_PER_RECORD`] revisions:
//!   each change deletes the oldest beyond that in its own batch (read from
//!   the index's keys, no record loaded).

use serde::Serialize;
use serde_json::Value;

use super::backend::{Guard, Write};
use super::db::{revision_id, to_value, Db, Origin};
use super::error::{Result, StoreError};
use super::model::stores::*;
use super::model::Revision;
use crate::platform;

/// Revisions kept per record (the newest).
pub const KEEP_PER_RECORD: usize = 50;

/// One record's change within a batch.
pub(crate) struct Change {
    pub store: &'static str,
    pub id: String,
    /// The new record; `None` deletes it.
    pub new: Option<Value>,
}

/// A revision as a history list shows it (without the stored text).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionInfo {
    pub id: String,
    pub store: String,
    pub record_id: String,
    /// "agent" or "user".
    pub origin: String,
    /// What the change was (the tool name for the agent's, "edit", "restore", ...).
    pub reason: String,
    pub created_at: f64,
    /// Whether the change created the record (there is no earlier version).
    pub created: bool,
    /// Length of the version before the change (its `content`, else the record), in characters.
    pub before_chars: usize,
}

impl From<&Revision> for RevisionInfo {
    fn from(r: &Revision) -> RevisionInfo {
        let before_chars = match &r.before {
            Some(before) => match before.get("content").and_then(Value::as_str) {
                Some(text) => text.chars().count(),
                None => before.to_string().chars().count(),
            },
            None => 0,
        };
        RevisionInfo {
            id: r.id.clone(),
            store: r.store.clone(),
            record_id: r.record_id.clone(),
            origin: r.origin.clone(),
            reason: r.reason.clone(),
            created_at: r.created_at,
            created: r.before.is_none(),
            before_chars,
        }
    }
}

/// A fingerprint of a record as stored (or of its absence): FNV-1a over a
/// canonical form (keys sorted, every number as a float's bits, the storage-only
/// index field left out), so a record read back from IndexedDB, whose
/// numbers come back as integers, matches what was written.
pub(crate) fn fingerprint(record: Option<&Value>) -> String {
    fn feed(hash: &mut u64, bytes: &[u8]) {
        for b in bytes {
            *hash ^= u64::from(*b);
            *hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn walk(hash: &mut u64, value: &Value) {
        match value {
            Value::Null => feed(hash, b"n"),
            Value::Bool(b) => feed(hash, if *b { b"t" } else { b"f" }),
            // The number's bits (1 and 1.0 are the same float; no float
            // formatting code is pulled into the package for this).
            Value::Number(n) => feed(hash, &n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes()),
            Value::String(s) => {
                feed(hash, format!("s{}:", s.len()).as_bytes());
                feed(hash, s.as_bytes());
            }
            Value::Array(items) => {
                feed(hash, format!("a{}", items.len()).as_bytes());
                items.iter().for_each(|v| walk(hash, v));
            }
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().filter(|k| k.as_str() != super::model::INDEX_FIELD).collect();
                keys.sort();
                feed(hash, format!("o{}", keys.len()).as_bytes());
                for key in keys {
                    feed(hash, format!("k{}:", key.len()).as_bytes());
                    feed(hash, key.as_bytes());
                    walk(hash, &map[key]);
                }
            }
        }
    }
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    match record {
        Some(value) => walk(&mut hash, value),
        None => feed(&mut hash, b"absent"),
    }
    format!("{hash:016x}")
}

/// A record's version a change was computed from (its `updatedAt`).
pub(crate) struct Based {
    pub store: &'static str,
    pub id: String,
    pub version: f64,
}

/// What a guarded batch expects of a record when it is written.
enum Expect {
    /// Still at this `updatedAt`.
    Version(f64),
    /// Still exactly this (a fingerprint; "absent" included).
    Same(String),
}

/// The guard of a batch that expects each record as given.
fn unchanged(expected: Vec<(&'static str, String, Expect)>) -> Guard<'static> {
    let reads = expected.iter().map(|(store, id, _)| (*store, id.clone())).collect();
    let check = move |found: Vec<Option<Value>>| -> Result<()> {
        for ((_, id, expect), current) in expected.into_iter().zip(found) {
            let holds = match &expect {
                Expect::Version(v) => {
                    current.as_ref().and_then(|c| c.get("updatedAt")).and_then(Value::as_f64) == Some(*v)
                }
                Expect::Same(f) => fingerprint(current.as_ref()) == *f,
            };
            if !holds {
                return Err(StoreError::Conflict {
                    id,
                    detail: "it was saved elsewhere (another tab, or the agent) while this change was being written; \
                             nothing was written: keep one text, then save again"
                        .into(),
                    current,
                });
            }
        }
        Ok(())
    };
    Guard { reads, check: Box::new(check) }
}

/// The object store a revision names (only stores that keep history).
fn history_store(revision: &Revision) -> Result<&'static str> {
    [ARTIFACTS, SECTIONS, PLOTS, PROJECTS].into_iter().find(|s| *s == revision.store).ok_or_else(|| StoreError::Codec {
        store: revision.store.clone(),
        detail: "unknown store in a revision".into(),
    })
}

impl Db {
    /// Writes `changes` in one atomic batch with `also`; when `origin` is
    /// given, each change keeps the previous version as a revision (one
    /// group for the batch) and each record's oldest revisions beyond
    /// [`KEEP_PER_RECORD`] are deleted.
    pub(crate) async fn change_all(
        &self,
        changes: Vec<Change>,
        origin: Option<Origin>,
        reason: &str,
        also: Vec<Write>,
    ) -> Result<()> {
        self.change_all_based(changes, origin, reason, also, Vec::new()).await
    }

    /// [`Db::change_all`], written only if every [`Based`] record is still
    /// at the version the change was computed from. Either way, a record a
    /// revision is kept for must still be what the revision calls its
    /// previous version: both are checked in the batch's own transaction
    /// (another tab's write in between fails it with `conflict`, and
    /// nothing is written), so no save is lost and an undo restores exactly
    /// what the change replaced.
    pub(crate) async fn change_all_based(
        &self,
        changes: Vec<Change>,
        origin: Option<Origin>,
        reason: &str,
        also: Vec<Write>,
        based: Vec<Based>,
    ) -> Result<()> {
        let mut writes = Vec::with_capacity(2 * changes.len() + also.len());
        let mut expected: Vec<(&'static str, String, Expect)> =
            based.into_iter().map(|b| (b.store, b.id, Expect::Version(b.version))).collect();
        if let Some(origin) = origin {
            let group = (changes.len() > 1).then(revision_id);
            for change in &changes {
                let before = self.backend.get(change.store, &change.id).await?;
                expected.push((change.store, change.id.clone(), Expect::Same(fingerprint(before.as_ref()))));
                let revision = Revision {
                    id: revision_id(),
                    store: change.store.to_owned(),
                    record_id: change.id.clone(),
                    before,
                    origin: origin.as_str().to_owned(),
                    reason: reason.to_owned(),
                    created_at: platform::now_ms(),
                    after: Some(fingerprint(change.new.as_ref())),
                    group: group.clone(),
                };
                let kept = self.backend.keys_by_index(REVISIONS, "recordId", &change.id).await?;
                let excess = (kept.len() + 1).saturating_sub(KEEP_PER_RECORD);
                writes.extend(kept.into_iter().take(excess).map(|key| Write::Delete { store: REVISIONS, key }));
                writes.push(Write::Put { store: REVISIONS, value: to_value(REVISIONS, &revision)? });
            }
        }
        for change in changes {
            writes.push(match change.new {
                Some(value) => Write::Put { store: change.store, value },
                None => Write::Delete { store: change.store, key: change.id },
            });
        }
        writes.extend(also);
        if expected.is_empty() {
            return self.backend.write(writes).await;
        }
        self.backend.write_guarded(unchanged(expected), writes).await
    }

    /// Revisions made by `origin`, newest first.
    pub async fn revisions(&self, origin: Origin) -> Result<Vec<Revision>> {
        let mut list: Vec<Revision> = self.list(REVISIONS, "origin", origin.as_str()).await?;
        super::order::sort_by(&mut list, |a, b| b.id.cmp(&a.id));
        Ok(list)
    }

    /// A record's history, newest first.
    pub async fn revisions_of(&self, record_id: &str) -> Result<Vec<RevisionInfo>> {
        let mut list: Vec<Revision> = self.list(REVISIONS, "recordId", record_id).await?;
        super::order::sort_by(&mut list, |a, b| b.id.cmp(&a.id));
        Ok(list.iter().map(RevisionInfo::from).collect())
    }

    /// Undoes the newest change made by `origin` (with the rest of its
    /// group): each record returns to its previous version exactly (or
    /// disappears if the change created it), in one batch with the
    /// revisions' removal. `None` when there is nothing to undo. Fails with
    /// `conflict`, changing nothing, when a record was written since.
    pub async fn undo_last(&self, origin: Origin) -> Result<Option<Revision>> {
        // Keys only (revision ids sort in the order changes were made): the
        // newest revision and its group are the only ones loaded.
        let keys = self.backend.keys_by_index(REVISIONS, "origin", origin.as_str()).await?;
        let Some(newest_key) = keys.last() else {
            return Ok(None);
        };
        let newest: Revision = self.require(REVISIONS, newest_key).await?;
        let mut group = vec![newest.clone()];
        if let Some(id) = &newest.group {
            // A group's revisions were made after its id was drawn, one after another.
            for key in keys.iter().rev().skip(1).take_while(|key| *key > id) {
                let revision: Revision = self.require(REVISIONS, key).await?;
                if revision.group.as_ref() == Some(id) {
                    group.push(revision);
                }
            }
        }
        let mut writes = Vec::with_capacity(2 * group.len());
        // Checked in the undo's own transaction: each record is still what
        // its change wrote, and each revision is still there (another tab
        // may have undone it a moment ago).
        let mut reads = Vec::with_capacity(2 * group.len());
        for revision in &group {
            let store = history_store(revision)?;
            reads.push((REVISIONS, revision.id.clone()));
            if revision.after.is_some() {
                reads.push((store, revision.record_id.clone()));
            }
            writes.push(match &revision.before {
                Some(before) => Write::Put { store, value: before.clone() },
                None => Write::Delete { store, key: revision.record_id.clone() },
            });
            writes.push(Write::Delete { store: REVISIONS, key: revision.id.clone() });
        }
        let check = |found: Vec<Option<Value>>| -> Result<()> {
            let mut found = found.into_iter();
            for revision in &group {
                if found.next().flatten().is_none() {
                    return Err(StoreError::Conflict {
                        current: None,
                        id: revision.record_id.clone(),
                        detail: format!(
                            "the {} change ({}) was undone elsewhere (another tab) a moment ago; nothing more was undone",
                            revision.origin, revision.reason
                        ),
                    });
                }
                let Some(after) = &revision.after else { continue };
                let current = found.next().flatten();
                if fingerprint(current.as_ref()) != *after {
                    return Err(StoreError::Conflict {
                        current,
                        id: revision.record_id.clone(),
                        detail: format!(
                            "it was changed after the {} change ({}) that undo would revert; nothing was undone \
                             (its history can restore any version)",
                            revision.origin, revision.reason
                        ),
                    });
                }
            }
            Ok(())
        };
        self.backend.write_guarded(Guard { reads, check: Box::new(check) }, writes).await?;
        Ok(Some(newest))
    }

    /// Puts back the version a revision kept (the record as it was before
    /// that change; deleting it when the change created it), as the person's
    /// new change: it gets a revision of its own, so it can be undone or
    /// restored past in turn.
    pub async fn restore_revision(&self, revision_id: &str) -> Result<RevisionInfo> {
        let revision: Revision = self.require(REVISIONS, revision_id).await?;
        let store = history_store(&revision)?;
        let change = Change { store, id: revision.record_id.clone(), new: revision.before.clone() };
        self.change_all(vec![change], Some(Origin::User), "restore", Vec::new()).await?;
        Ok(RevisionInfo::from(&revision))
    }
}
