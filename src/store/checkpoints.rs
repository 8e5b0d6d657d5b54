//! Graph checkpoints in the database (IndexedDB in the browser), durable
//! per step: a tab killed mid-run resumes at its last completed step.
//! Records: `{id: "<thread>/<checkpoint>", threadId, step, checkpoint}`; the
//! newest `keep_per_thread` are kept, the older ones deleted in the same
//! batch as the new one. Large strings of the state are stored once per
//! thread as blobs and referenced (see `store::blobs`), so a checkpoint
//! costs its small fields, not another copy of every page read so far.
//!
//! Each step's batch is issued when the step ends, without waiting for the
//! previous ones to commit: IndexedDB runs transactions on one store in the
//! order they were created, so the step's transaction commits behind its
//! predecessors while the next node already runs, and a crash loses at most
//! the steps whose transactions had not committed yet. Steps that end in
//! one synchronous stretch of the page (nodes that await nothing) share one
//! transaction, started once that stretch yields (none of them could commit
//! before it does anyway). A pause for review, the end of a run and every
//! read start what waits and wait for all of it.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::backend::{Backend, Write};
use super::blobs;
use super::model::stores::{BLOBS, CHECKPOINTS};
use crate::graph::{Checkpoint, CheckpointError, Checkpointer, GraphState, PrunePolicy};

/// A [`Checkpointer`] over any [`Backend`]: one transaction per step, issued
/// at once and awaited only by [`Checkpointer::flush`] (at a pause, at the
/// end of a run, before a read).
pub struct StoreCheckpointer<S> {
    backend: Rc<dyn Backend>,
    policy: PrunePolicy,
    /// Writes of the steps ended since the page last yielded, and the
    /// batches issued and not yet known to be committed, oldest first.
    queue: Rc<Queue>,
    /// Known checkpoint keys per thread, oldest first (read once per thread).
    keys: RefCell<HashMap<String, Vec<(u64, String)>>>,
    /// Blob hashes already stored per thread (read once per thread).
    blobs: RefCell<HashMap<String, HashSet<String>>>,
    _state: PhantomData<S>,
}

impl<S> StoreCheckpointer<S> {
    pub fn new(backend: Rc<dyn Backend>, policy: PrunePolicy) -> StoreCheckpointer<S> {
        StoreCheckpointer {
            backend,
            policy,
            queue: Rc::default(),
            keys: RefCell::new(HashMap::new()),
            blobs: RefCell::new(HashMap::new()),
            _state: PhantomData,
        }
    }
}

type InFlight = Pin<Box<dyn Future<Output = Result<(), super::StoreError>>>>;

#[derive(Default)]
struct Queue {
    waiting: RefCell<Vec<Write>>,
    in_flight: RefCell<Vec<InFlight>>,
}

impl Queue {
    /// Issues what waits as one batch (the backend issues its requests on
    /// the first poll) and keeps it until a flush; a batch that failed at
    /// once is the error.
    fn start(&self, backend: &Rc<dyn Backend>) -> Result<(), super::StoreError> {
        let writes = std::mem::take(&mut *self.waiting.borrow_mut());
        let backend = backend.clone();
        let mut batch: InFlight = Box::pin(async move { backend.write(writes).await });
        match batch.as_mut().poll(&mut Context::from_waker(futures_util::task::noop_waker_ref())) {
            Poll::Ready(result) => result,
            Poll::Pending => {
                self.in_flight.borrow_mut().push(batch);
                Ok(())
            }
        }
    }
}

/// A storage failure keeps its code: a full disk is `quota_exceeded` and
/// another tab's upgrade `reload_required` all the way to `agent.send`.
fn storage(e: super::StoreError) -> CheckpointError {
    CheckpointError::Storage { code: e.code(), message: e.to_string() }
}

impl<S: GraphState> StoreCheckpointer<S> {
    /// Queues `writes` for the batch that starts once the page yields (at
    /// once natively, where there is no event loop to wait for); a flush
    /// starts it sooner.
    fn issue(&self, writes: Vec<Write>) -> Result<(), CheckpointError> {
        let first = self.queue.waiting.borrow().is_empty();
        self.queue.waiting.borrow_mut().extend(writes);
        let (queue, backend) = (self.queue.clone(), self.backend.clone());
        let later = async move {
            if let Err(e) = queue.start(&backend) {
                queue.in_flight.borrow_mut().push(Box::pin(std::future::ready(Err(e))));
            }
        };
        if first && !crate::platform::spawn(later) {
            return self.queue.start(&self.backend).map_err(|e| self.failed(e));
        }
        Ok(())
    }

    /// A batch did not land: forget the cached keys so they are read afresh.
    fn failed(&self, e: super::StoreError) -> CheckpointError {
        self.keys.borrow_mut().clear();
        self.blobs.borrow_mut().clear();
        storage(e)
    }

    /// A stored record back into a checkpoint, its blobs read back in.
    async fn decode(&self, thread: &str, record: Value) -> Result<Checkpoint<S>, CheckpointError> {
        let mut checkpoint = record.get("checkpoint").cloned().unwrap_or(Value::Null);
        let mut named = HashSet::new();
        blobs::references(&checkpoint, &mut named);
        let mut texts = HashMap::with_capacity(named.len());
        for hash in named {
            if let Some(blob) = self.backend.get(BLOBS, &format!("{thread}/{hash}")).await.map_err(storage)? {
                if let Some(text) = blob.get("text").and_then(Value::as_str) {
                    texts.insert(hash, text.to_owned());
                }
            }
        }
        blobs::restore(&mut checkpoint, &texts).map_err(CheckpointError::Codec)?;
        // Read by hand, the state by its own decoder (the agent's is
        // written by hand: see `GraphState::decode`).
        let f = crate::json::Fields(&checkpoint);
        let read = || {
            Ok(Checkpoint {
                id: f.text("id", true)?,
                thread_id: f.text("threadId", true)?,
                parent_id: f.opt_text("parentId")?,
                step: f.count("step", true)?,
                state: S::decode(f.need("state")?)?,
                next: f.opt_text("next")?,
                interrupt: f.get("interrupt", false)?.cloned(),
                created_at: f.float("createdAt")?,
            })
        };
        read().map_err(CheckpointError::Codec)
    }

    /// Writes for the blobs of `found` this thread does not have yet.
    async fn new_blobs(&self, thread: &str, found: Vec<(String, String)>) -> Result<Vec<Write>, CheckpointError> {
        if found.is_empty() {
            return Ok(Vec::new());
        }
        if !self.blobs.borrow().contains_key(thread) {
            let prefix = format!("{thread}/");
            let stored: HashSet<String> = self
                .backend
                .keys_by_index(BLOBS, "threadId", thread)
                .await
                .map_err(storage)?
                .into_iter()
                .filter_map(|key| key.strip_prefix(&prefix).map(str::to_owned))
                .collect();
            self.blobs.borrow_mut().insert(thread.to_owned(), stored);
        }
        let mut known = self.blobs.borrow_mut();
        let known = known.entry(thread.to_owned()).or_default();
        Ok(found
            .into_iter()
            .filter(|(hash, _)| known.insert(hash.clone()))
            .map(|(hash, text)| Write::Put {
                store: BLOBS,
                value: json!({ "id": format!("{thread}/{hash}"), "threadId": thread, "text": text }),
            })
            .collect())
    }

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
        // Keys only (no checkpoint is loaded): `<thread>/<step, zero-padded>`.
        let mut keys: Vec<(u64, String)> = self
            .backend
            .keys_by_index(CHECKPOINTS, "threadId", thread)
            .await
            .map_err(storage)?
            .into_iter()
            .filter_map(|key| Some((key.rsplit('/').next()?.parse().ok()?, key)))
            .collect();
        super::order::sort_by(&mut keys, |a, b| a.cmp(b));
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
        let mut stored = serde_json::to_value(&checkpoint).map_err(|e| CheckpointError::Codec(e.to_string()))?;
        let mut found = Vec::new();
        blobs::extract(&mut stored, &mut found);
        // New blobs go in the checkpoint's own batch: a checkpoint never names a missing one.
        let mut writes = self.new_blobs(&thread, found).await?;
        let value = json!({ "id": key, "threadId": thread, "step": step, "checkpoint": stored });
        keys.retain(|(_, k)| *k != key);
        keys.push((step, key));
        super::order::sort_by(&mut keys, |a, b| a.cmp(b));
        writes.push(Write::Put { store: CHECKPOINTS, value });
        let excess = keys.len().saturating_sub(self.policy.keep_per_thread.max(1));
        for (_, old) in keys.drain(..excess) {
            writes.push(Write::Delete { store: CHECKPOINTS, key: old });
        }
        let pause = checkpoint.interrupt.is_some();
        self.keys.borrow_mut().insert(thread, keys);
        self.issue(writes)?;
        if pause {
            // A pending review must survive a reload at once.
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        let mut first_error = self.queue.start(&self.backend).err();
        let batches = std::mem::take(&mut *self.queue.in_flight.borrow_mut());
        for batch in batches {
            if let Err(e) = batch.await {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(self.failed(e)),
            None => Ok(()),
        }
    }

    async fn latest(&self, thread: &str) -> Result<Option<Checkpoint<S>>, CheckpointError> {
        self.flush().await?;
        let keys = self.known_keys(thread).await?;
        let Some((_, key)) = keys.last() else {
            return Ok(None);
        };
        match self.backend.get(CHECKPOINTS, key).await.map_err(storage)? {
            Some(record) => self.decode(thread, record).await.map(Some),
            None => Ok(None),
        }
    }

    async fn get(&self, thread: &str, id: &str) -> Result<Option<Checkpoint<S>>, CheckpointError> {
        self.flush().await?;
        match self.backend.get(CHECKPOINTS, &format!("{thread}/{id}")).await.map_err(storage)? {
            Some(record) => self.decode(thread, record).await.map(Some),
            None => Ok(None),
        }
    }

    async fn history(&self, thread: &str) -> Result<Vec<Checkpoint<S>>, CheckpointError> {
        self.flush().await?;
        let mut list = Vec::new();
        for record in self.records(thread).await? {
            list.push(self.decode(thread, record).await?);
        }
        list.reverse();
        Ok(list)
    }
}
