//! The assistant graph's nodes, one topic per file: routing, the model
//! call and its request, running tools (with the search optimiser), the
//! two review nodes, and long-term memory.

mod compact;
mod memory;
mod reply;
mod request;
mod review;
mod route;
mod search;
mod tools;

pub use memory::{MemoryJudge, MemoryRefiner};
pub use reply::{render_call, Agent, Chat};
pub use review::{PrepareReview, Review};
pub use route::{fallback_strategy, Router};
pub use tools::Tools;

use super::state::AgentState;
use crate::graph::NodeError;
use crate::llm::{LlmError, Message};

fn llm_failure(e: LlmError) -> NodeError {
    match e {
        LlmError::Aborted => NodeError::Aborted,
        other => NodeError::failed(other.code(), other.to_string()),
    }
}

fn last_user_text(state: &AgentState) -> String {
    state.turn().iter().find_map(|m| matches!(m, Message::User { .. }).then(|| m.text().to_owned())).unwrap_or_default()
}
