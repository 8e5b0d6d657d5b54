//! The one write path: an atomic batch of puts and deletes in one
//! transaction, every request issued at once, then committed. Artifact
//! records get their index fields by the rule every backend shares
//! (`backend::add_index_fields`: in a large batch none, their sessions
//! marked stale instead); the search index hears of the batch once it
//! committed (`store::search`).

use serde_json::Value;
use wasm_bindgen::JsValue;
use web_sys::IdbTransactionMode;

use super::{get_all_of, settle, store_error, to_js, transaction_promise, IdbBackend};
use crate::store::backend::{add_index_fields, Guard, Write};
use crate::store::error::Result;
use crate::store::search;

/// Failure injection for the browser tests (feature `test-hooks`, never in
/// the package): the next batch fails after its first request with a
/// DOMException of the given name, and is rolled back.
#[cfg(feature = "test-hooks")]
pub mod testing {
    use std::cell::RefCell;

    thread_local! {
        pub(super) static FAIL_NEXT: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// Makes the next batch fail with a DOMException named `name`.
    pub fn fail_next_write_with(name: &str) {
        FAIL_NEXT.with(|f| *f.borrow_mut() = Some(name.to_owned()));
    }
}

fn injected_failure() -> Option<JsValue> {
    #[cfg(feature = "test-hooks")]
    if let Some(name) = testing::FAIL_NEXT.with(|f| f.borrow_mut().take()) {
        return web_sys::DomException::new_with_message_and_name("simulated failure", &name).ok().map(Into::into);
    }
    None
}

/// Applies every write of the batch or none; with a guard, only if the
/// guard's records, read first in the same transaction, pass its check.
pub(super) async fn write(backend: &IdbBackend, guard: Option<Guard<'_>>, writes: Vec<Write>) -> Result<()> {
    write_as(backend, guard, writes, false).await
}

/// [`write`]; with `new_only`, every put is an `add`: a key that exists
/// already fails the request, and the whole batch with it (`ConstraintError`).
pub(super) async fn write_as(
    backend: &IdbBackend,
    guard: Option<Guard<'_>>,
    mut writes: Vec<Write>,
    new_only: bool,
) -> Result<()> {
    if writes.is_empty() && guard.is_none() {
        return Ok(());
    }
    // What the batch changes in the search index (applied once it commits),
    // and a deleted record's stored segmentation, deleted with it.
    let (changes, also) = search::plan(&writes);
    writes.extend(also);
    add_index_fields(&mut writes);
    let mut stores: Vec<&str> = writes
        .iter()
        .map(|w| match w {
            Write::Put { store, .. } | Write::Delete { store, .. } => *store,
        })
        .collect();
    // Every record is converted before anything is issued: a record that
    // cannot be converted fails the batch before it starts. All the puts'
    // values cross in one JSON array (moved, not copied).
    let mut values: Vec<Value> = Vec::new();
    let mut requests: Vec<(&str, std::result::Result<usize, String>)> = Vec::with_capacity(writes.len());
    for write in writes {
        match write {
            Write::Put { store, value } => {
                requests.push((store, Ok(values.len())));
                values.push(value);
            }
            Write::Delete { store, key } => requests.push((store, Err(key))),
        }
    }
    if let Some(guard) = &guard {
        stores.extend(guard.reads.iter().map(|(store, _)| *store));
    }
    stores.sort_unstable();
    stores.dedup();
    let records = js_sys::Array::from(&to_js(&values)?);

    let tx = backend.transaction(&stores, IdbTransactionMode::Readwrite)?;
    let done = transaction_promise(&tx);
    // The guard's reads are issued first and the writes right behind them,
    // without waiting: a transaction's requests run in order, so the reads
    // see the records as they were before the batch, and nothing commits
    // before the check below has passed (a failed check aborts the whole
    // transaction, the writes with it). One round trip instead of two.
    let (found, check) = match guard {
        Some(guard) => match get_all_of(&tx, &guard.reads) {
            Ok(found) => (Some(found), Some(guard.check)),
            Err(e) => {
                let _ = tx.abort();
                let _ = settle(done).await;
                return Err(e);
            }
        },
        None => (None, None),
    };
    let mut failure = None;
    for (i, (store, request)) in requests.iter().enumerate() {
        let issued = tx.object_store(store).and_then(|s| match request {
            Ok(at) if new_only => s.add(&records.get(*at as u32)),
            Ok(at) => s.put(&records.get(*at as u32)),
            Err(key) => s.delete(&JsValue::from_str(key)),
        });
        failure = match issued {
            Err(e) => Some(e),
            Ok(_) if i == 0 => injected_failure(),
            Ok(_) => None,
        };
        if failure.is_some() {
            break;
        }
    }
    if let Some(e) = failure {
        let _ = tx.abort();
        let _ = settle(done).await;
        return Err(store_error(&e));
    }
    if let (Some(found), Some(check)) = (found, check) {
        if let Err(e) = found.await.and_then(check) {
            let _ = tx.abort();
            let _ = settle(done).await;
            return Err(e);
        }
    }
    commit(&tx);
    settle(done).await?;
    let keys = search::changed_keys(&changes);
    backend.search.apply(changes);
    backend.announce(&stores, keys);
    Ok(())
}

/// Asks the transaction to commit now rather than when the event loop is
/// idle (web-sys marks `commit` deprecated; browsers without it simply
/// auto-commit, so a failure here is ignored).
#[allow(deprecated)]
pub(super) fn commit(tx: &web_sys::IdbTransaction) {
    let _ = tx.commit();
}
