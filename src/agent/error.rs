//! The error of an agent call, with the stable code JS sees.

use crate::error::ErrorCode;
use crate::graph::{CheckpointError, GraphError};
use crate::store::StoreError;

/// An error of a run or of an agent call, with a stable code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AgentError {
    pub code: ErrorCode,
    pub message: String,
}

impl AgentError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> AgentError {
        AgentError { code, message: message.into() }
    }
}

impl From<GraphError> for AgentError {
    fn from(e: GraphError) -> AgentError {
        AgentError { code: e.code(), message: e.to_string() }
    }
}

impl From<StoreError> for AgentError {
    fn from(e: StoreError) -> AgentError {
        AgentError { code: e.code(), message: e.to_string() }
    }
}

impl From<CheckpointError> for AgentError {
    fn from(e: CheckpointError) -> AgentError {
        GraphError::from(e).into()
    }
}
