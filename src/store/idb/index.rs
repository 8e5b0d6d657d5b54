//! The artifact index as the agent reads it: the keys of the artifact
//! store's `bySessionActive` index (session, activity, id, title, snippet,
//! length, creation time, lifecycle), read by a key cursor without loading a record.
//! A session a bulk write left stale is indexed first, once.

use js_sys::Array;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::IdbTransactionMode;

use super::write::commit;
use super::{index_keys, items_from_js, request_promise, settle, store_error, to_js, transaction_promise, IdbBackend};
use crate::store::backend::{index_from_records, Backend};
use crate::store::error::Result;
use crate::store::model::stores::{ARTIFACTS, INDEX_STALE};
use crate::store::model::{ArtifactSnippet, Lifecycle, INDEX_FIELD};

/// Read from the `bySessionActive` index keys alone. The index holds active
/// artifacts only (what the agent injects); a listing of every artifact
/// reads the records.
pub(super) async fn artifact_index(
    backend: &IdbBackend,
    session_id: &str,
    active_only: bool,
) -> Result<Vec<ArtifactSnippet>> {
    if active_only {
        for _ in 0..3 {
            let (entries, stale) = read_index(backend, session_id).await?;
            if !stale {
                return Ok(entries);
            }
            reindex_session(backend, session_id).await?;
        }
    }
    // Every artifact, or bulk writes keep marking the session stale: derive
    // from the records.
    index_from_records(backend.by_index(ARTIFACTS, "sessionId", session_id).await?, active_only)
}

/// One read of a session's active index entries and whether the session is
/// marked stale.
async fn read_index(backend: &IdbBackend, session_id: &str) -> Result<(Vec<ArtifactSnippet>, bool)> {
    let tx = backend.transaction(&[ARTIFACTS, INDEX_STALE], IdbTransactionMode::Readonly)?;
    let session = JsValue::from_str(session_id);
    let lower: Array = [session.clone(), 1.into()].iter().collect();
    let upper: Array = [session.clone(), 1.into(), Array::new().into()].iter().collect();
    // Both requests are issued before anything is awaited.
    let stale =
        request_promise(&tx.object_store(INDEX_STALE).and_then(|s| s.get(&session)).map_err(|e| store_error(&e))?);
    let index = tx.object_store(ARTIFACTS).and_then(|s| s.index("bySessionActive")).map_err(|e| store_error(&e))?;
    let keys: Array = settle(index_keys(&index, &lower, &upper)).await?.unchecked_into();
    let stale = !settle(stale).await?.is_undefined();
    Ok((keys.iter().filter_map(|k| entry_of_key(&k)).collect(), stale))
}

/// Adds the index fields to every artifact of a stale session and clears its
/// mark, in one transaction (read, then rewrite, without leaving it).
async fn reindex_session(backend: &IdbBackend, session_id: &str) -> Result<()> {
    let tx = backend.transaction(&[ARTIFACTS, INDEX_STALE], IdbTransactionMode::Readwrite)?;
    let done = transaction_promise(&tx);
    let rewrite = async {
        let store = tx.object_store(ARTIFACTS)?;
        let request = store.index("sessionId")?.get_all_with_key(&JsValue::from_str(session_id))?;
        // The continuation runs in the success event's microtask checkpoint,
        // while the transaction is still active.
        let records = items_from_js(ARTIFACTS, &settle(request_promise(&request)).await?)?;
        let indexed: Vec<Value> = records
            .into_iter()
            .map(|mut record| {
                if record.is_object() {
                    record[INDEX_FIELD] = ArtifactSnippet::index_field(&record);
                }
                record
            })
            .collect();
        for record in Array::from(&to_js(&indexed)?).iter() {
            store.put(&record)?;
        }
        tx.object_store(INDEX_STALE)?.delete(&JsValue::from_str(session_id))?;
        Ok::<(), crate::store::StoreError>(())
    };
    if let Err(e) = rewrite.await {
        let _ = tx.abort();
        let _ = settle(done).await;
        return Err(e);
    }
    commit(&tx);
    settle(done).await.map(|_| ())
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
        lifecycle: text(7).map_or(Lifecycle::Overwritable, |name| Lifecycle::from_name(&name)),
    })
}
