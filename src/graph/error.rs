//! Errors of building and running graphs.

use super::checkpoint::CheckpointError;
use crate::error::ErrorCode;

/// `Result` of the graph engine.
pub type Result<T> = std::result::Result<T, GraphError>;

/// Why a graph could not be compiled or a run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    /// An edge names a node that was never added.
    #[error("edge {from} -> {to}: there is no node named {to:?}")]
    UnknownNode { from: String, to: String },
    /// Two nodes share a name, or a node uses a reserved name.
    #[error("node name {0:?} is used twice or reserved")]
    DuplicateNode(String),
    /// Nothing leaves START.
    #[error("the graph has no entry: add an edge from START")]
    NoEntry,
    /// A node has no outgoing edge, so a run would stop there by accident.
    #[error("node {0:?} has no way out: add an edge from it (to END if it finishes the run)")]
    NoWayOut(String),
    /// A node has several outgoing edges (fan-out is not supported).
    #[error("node {0:?} has more than one outgoing edge; use one conditional edge instead")]
    SeveralWaysOut(String),
    /// A node cannot be reached from START.
    #[error("node {0:?} cannot be reached from START")]
    Unreachable(String),
    /// A conditional edge returned a route it did not declare.
    #[error("the router after {node:?} chose {route:?}, which is not one of its declared targets")]
    UnknownRoute { node: String, route: String },
    /// The run took more steps than allowed.
    #[error("recursion limit of {limit} steps reached; the run kept cycling through {}", cycle.join(" -> "))]
    RecursionLimit { limit: usize, cycle: Vec<String> },
    /// A node failed, with the node's own code.
    #[error("node {node:?} failed: {message}")]
    Node { node: String, code: ErrorCode, message: String },
    /// The checkpointer failed (with the storage's code: a full disk stays
    /// `quota_exceeded`, another tab's upgrade `reload_required`).
    #[error("checkpoint storage failed: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// Resume was asked of a thread with nothing to resume.
    #[error("thread {0:?} has no pending run to resume")]
    NothingToResume(String),
    /// A checkpoint id does not exist in the thread.
    #[error("thread {thread:?} has no checkpoint {id:?}")]
    NoSuchCheckpoint { thread: String, id: String },
}

impl GraphError {
    /// Stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            GraphError::UnknownNode { .. }
            | GraphError::DuplicateNode(_)
            | GraphError::NoEntry
            | GraphError::NoWayOut(_)
            | GraphError::SeveralWaysOut(_)
            | GraphError::Unreachable(_) => ErrorCode::InvalidGraph,
            GraphError::UnknownRoute { .. } => ErrorCode::UnknownRoute,
            GraphError::RecursionLimit { .. } => ErrorCode::RecursionLimit,
            GraphError::Node { code, .. } => *code,
            GraphError::Checkpoint(e) => e.code(),
            GraphError::NothingToResume(_) => ErrorCode::NothingToResume,
            GraphError::NoSuchCheckpoint { .. } => ErrorCode::NoSuchCheckpoint,
        }
    }
}

/// How a node's step can end other than with an update.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeError {
    /// Pause the run for a person; the payload says what to review.
    Interrupt(serde_json::Value),
    /// The run was cancelled while the node worked.
    Aborted,
    /// The node failed with a stable `code` and a message.
    Failed { code: ErrorCode, message: String },
}

impl NodeError {
    /// A failure with a code.
    pub fn failed(code: ErrorCode, message: impl Into<String>) -> NodeError {
        NodeError::Failed { code, message: message.into() }
    }
}
