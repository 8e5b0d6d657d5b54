//! Graph checkpoints in the database (IndexedDB in the browser), so a
//! pending review survives a reload. Records: `{id: "<thread>/<checkpoint>",
//! threadId, step, checkpoint}`; the newest `keep_per_thread` are kept, the
//! older ones deleted in the same batch as the new one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::rc::Rc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::backend::{Backend, Write};
use super::model::stores::CHECKPOINTS;
use crate::graph::{Checkpoint, CheckpointError, Checkpointer, GraphState, PrunePolicy};

/// A [`Checkpointer`] over any [`Backend`]. The checkpoints of a run's
/// steps are grouped and written in one batch when the run ends or pauses
/// for review (the engine flushes then), so persisting every step costs one
/// transaction per run rather than one per step; reads flush first.
pub struct StoreCheckpointer<S> {
    backend: Rc<dyn Backend>,
    policy: PrunePolicy,
    pending: RefCell<Vec<Write>>,
    /// Known checkpoint keys per thread, oldest first (read once per thread).
    keys: RefCell<HashMap<String, Vec<(u64, String)>>>,
    _state: PhantomData<S>,
}

impl<S> StoreCheckpointer<S> {
    pub fn new(backend: Rc<dyn Backend>, policy: PrunePolicy) -> StoreCheckpointer<S> {
        StoreCheckpointer {
            backend,
            policy,
            pending: RefCell::new(Vec::new()),
            keys: RefCell::new(HashMap::new()),
            _state: PhantomData,
        }
    }
}

fn storage(e: super::StoreError) -> CheckpointError {
    CheckpointError::Storage(e.to_string())
}

fn decode<S: GraphState>(record: Value) -> Result<Checkpoint<S>, CheckpointError> {
    serde_json::from_value(record.get("checkpoint").cloned().unwrap_or(Value::Null))
        .map_err(|e| CheckpointError::Codec(e.to_string()))
}

impl<S: GraphState> StoreCheckpointer<S> {
    async fn records(&self, thread: &str) -> Result<Vec<Value>, CheckpointError> {
        let mut records = self.backend.by_index(CHECKPOINTS, "threadId", thread).await.map_err(storage)?;
        let step = |r: &Value| r.get("step").and_then(Value::as_u64).unwrap_or(0);
        super::order::sort_by(&mut records, |a, b| step(a).cmp(&step(b)));
        Ok(records)
    }

    async fn known_keys(&self, thread: &str) -> Result<Vec<(u64, String)>, CheckpointError> {
        if let Some(keys) = self.keys.borrow().get(thread) {
            return Ok(keys.clone());
        }
        let keys: Vec<(u64, String)> = self
            .records(thread)
            .await?
            .iter()
            .filter_map(|r| Some((r.get("step")?.as_u64()?, r.get("id")?.as_str()?.to_owned())))
            .collect();
        self.keys.borrow_mut().insert(thread.to_owned(), keys.clone());
        Ok(keys)
    }
}

#[async_trait(?Send)]
impl<S: GraphState> Checkpointer<S> for StoreCheckpointer<S> {
    async fn put(&self, checkpoint: Checkpoint<S>) -> Result<(), CheckpointError> {
        let thread = checkpoint.thread_id.clone();
        let mut keys = self.known_keys(&thread).await?;
        let key = format!("{thread}/{}", checkpoint.id);
        let step = checkpoint.step;
        let value = json!({
            "id": key,
            "threadId": thread,
            "step": step,
            "checkpoint": serde_json::to_value(&checkpoint).map_err(|e| CheckpointError::Codec(e.to_string()))?,
        });
        keys.retain(|(_, k)| *k != key);
        keys.push((step, key));
        super::order::sort_by(&mut keys, |a, b| a.cmp(b));
        let mut writes = vec![Write::Put { store: CHECKPOINTS, value }];
        let excess = keys.len().saturating_sub(self.policy.keep_per_thread.max(1));
        for (_, old) in keys.drain(..excess) {
            writes.push(Write::Delete { store: CHECKPOINTS, key: old });
        }
        let pause = checkpoint.interrupt.is_some();
        self.pending.borrow_mut().extend(writes);
        self.keys.borrow_mut().insert(thread, keys);
        if pause {
            // A pending review must survive a reload at once.
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        let writes = std::mem::take(&mut *self.pending.borrow_mut());
        if writes.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.backend.write(writes).await {
            // The batch did not land: forget the cached keys so they are read afresh.
            self.keys.borrow_mut().clear();
            return Err(storage(e));
        }
        Ok(())
    }

    async fn latest(&self, thread: &str) -> Result<Option<Checkpoint<S>>, CheckpointError> {
        self.flush().await?;
        let keys = self.known_keys(thread).await?;
        let Some((_, key)) = keys.last() else {
            return Ok(None);
        };
        match self.backend.get(CHECKPOINTS, key).await.map_err(storage)? {
            Some(record) => decode(record).map(Some),
            None => Ok(None),
        }
    }

    async fn get(&self, thread: &str, id: &str) -> Result<Option<Checkpoint<S>>, CheckpointError> {
        self.flush().await?;
        self.backend.get(CHECKPOINTS, &format!("{thread}/{id}")).await.map_err(storage)?.map(decode).transpose()
    }

    async fn history(&self, thread: &str) -> Result<Vec<Checkpoint<S>>, CheckpointError> {
        self.flush().await?;
        let mut list =
            self.records(thread).await?.into_iter().map(decode).collect::<Result<Vec<Checkpoint<S>>, _>>()?;
        list.reverse();
        Ok(list)
    }
}
