//! Checkpoints: a copy of the state after every step, keyed by thread (the
//! chat session), linked to its parent, with the node to run next and any
//! pending interrupt. A run can be resumed from the latest one, even on a
//! new page load, and any one can be read or forked.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::state::GraphState;
use crate::error::ErrorCode;

/// The state of a thread after one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint<S> {
    /// Unique within the thread; sorts in step order.
    pub id: String,
    pub thread_id: String,
    pub parent_id: Option<String>,
    /// Steps since the thread began (continues across runs).
    pub step: u64,
    /// A copy of the full state.
    pub state: S,
    /// The node to run next; `None` once a run reached END.
    pub next: Option<String>,
    /// The payload of the interrupt the run waits on, if any.
    pub interrupt: Option<Value>,
    /// Milliseconds since the epoch.
    pub created_at: f64,
}

impl<S> Checkpoint<S> {
    /// The id of the checkpoint at `step`.
    pub fn id_for(step: u64) -> String {
        format!("{step:012}")
    }
}

/// Why a checkpointer failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The storage refused, with its code (`quota_exceeded`,
    /// `reload_required`, `storage`, ...).
    #[error("{message}")]
    Storage { code: ErrorCode, message: String },
    /// A stored checkpoint could not be read back.
    #[error("unreadable checkpoint: {0}")]
    Codec(String),
}

impl CheckpointError {
    /// The storage's code, or `codec`.
    pub fn code(&self) -> ErrorCode {
        match self {
            CheckpointError::Storage { code, .. } => *code,
            CheckpointError::Codec(_) => ErrorCode::Codec,
        }
    }
}

/// Where checkpoints live. `?Send`: the browser's storage is single-threaded.
#[async_trait(?Send)]
pub trait Checkpointer<S: GraphState> {
    /// Stores a checkpoint (and prunes old ones by its policy).
    async fn put(&self, checkpoint: Checkpoint<S>) -> Result<(), CheckpointError>;
    /// The newest checkpoint of `thread`.
    async fn latest(&self, thread: &str) -> Result<Option<Checkpoint<S>>, CheckpointError>;
    /// One checkpoint.
    async fn get(&self, thread: &str, id: &str) -> Result<Option<Checkpoint<S>>, CheckpointError>;
    /// The thread's checkpoints, newest first.
    async fn history(&self, thread: &str) -> Result<Vec<Checkpoint<S>>, CheckpointError>;
    /// Makes every checkpoint put so far durable. The engine calls it when a
    /// run ends (completed, interrupted, aborted or failed); a checkpointer
    /// may group the writes of a run's steps until then.
    async fn flush(&self) -> Result<(), CheckpointError> {
        Ok(())
    }
}

/// How many checkpoints to keep per thread (the newest are kept; the latest
/// one, which a pending run resumes from, always is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrunePolicy {
    pub keep_per_thread: usize,
}

impl Default for PrunePolicy {
    fn default() -> PrunePolicy {
        PrunePolicy { keep_per_thread: 100 }
    }
}

/// Checkpoints in memory (tests, and sessions that need no durability).
pub struct MemoryCheckpointer<S> {
    threads: RefCell<HashMap<String, VecDeque<Checkpoint<S>>>>,
    policy: PrunePolicy,
}

impl<S> MemoryCheckpointer<S> {
    pub fn new(policy: PrunePolicy) -> MemoryCheckpointer<S> {
        MemoryCheckpointer { threads: RefCell::new(HashMap::new()), policy }
    }
}

impl<S> Default for MemoryCheckpointer<S> {
    fn default() -> MemoryCheckpointer<S> {
        MemoryCheckpointer::new(PrunePolicy::default())
    }
}

#[async_trait(?Send)]
impl<S: GraphState> Checkpointer<S> for MemoryCheckpointer<S> {
    async fn put(&self, checkpoint: Checkpoint<S>) -> Result<(), CheckpointError> {
        let mut threads = self.threads.borrow_mut();
        let list = match threads.get_mut(&checkpoint.thread_id) {
            Some(list) => list,
            None => threads.entry(checkpoint.thread_id.clone()).or_default(),
        };
        list.push_back(checkpoint);
        while list.len() > self.policy.keep_per_thread.max(1) {
            list.pop_front();
        }
        Ok(())
    }

    async fn latest(&self, thread: &str) -> Result<Option<Checkpoint<S>>, CheckpointError> {
        Ok(self.threads.borrow().get(thread).and_then(|l| l.back().cloned()))
    }

    async fn get(&self, thread: &str, id: &str) -> Result<Option<Checkpoint<S>>, CheckpointError> {
        Ok(self.threads.borrow().get(thread).and_then(|l| l.iter().find(|c| c.id == id).cloned()))
    }

    async fn history(&self, thread: &str) -> Result<Vec<Checkpoint<S>>, CheckpointError> {
        Ok(self.threads.borrow().get(thread).map(|l| l.iter().rev().cloned().collect()).unwrap_or_default())
    }
}
